import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROOT, tempDir, type CliResult } from '../helpers/cli.js';

/**
 * splitdance installed globally (`npm install -g`): a handler anywhere can import
 * `PermanentError` from 'splitdance' (ESM, CommonJS, or TypeScript through tsx), and a handler
 * that fails to load is one line without --verbose. The package is `npm pack`'s tarball, laid
 * out as `npm install -g --prefix P` lays it out (P/lib/node_modules/splitdance, P/bin/splitdance
 * a link to its bin), with the dependencies this checkout installed: the real install fetches and
 * compiles them (minutes, network), so it runs with SPLITDANCE_LONG=1.
 */
function packTarball(into: string): string {
  const packed = JSON.parse(execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', into], { cwd: ROOT, encoding: 'utf8' }));
  return join(into, packed[0].filename as string);
}

function globalLayout(): string {
  const prefix = tempDir('sd-global-');
  const tarball = packTarball(prefix);
  const pkg = join(prefix, 'lib', 'node_modules', 'splitdance');
  mkdirSync(pkg, { recursive: true });
  execFileSync('tar', ['-xzf', tarball, '-C', pkg, '--strip-components=1']);
  symlinkSync(join(ROOT, 'node_modules'), join(pkg, 'node_modules'));
  mkdirSync(join(prefix, 'bin'));
  symlinkSync('../lib/node_modules/splitdance/bin/splitdance.js', join(prefix, 'bin', 'splitdance'));
  return join(prefix, 'bin', 'splitdance');
}

function realGlobalInstall(): string {
  const prefix = tempDir('sd-global-npm-');
  const tarball = packTarball(prefix);
  execFileSync('npm', ['install', '-g', '--prefix', prefix, '--no-audit', '--no-fund', tarball], { stdio: 'pipe', timeout: 600_000 });
  return join(prefix, 'bin', 'splitdance');
}

/** Runs the installed command (its own shebang, as a shell would) in `cwd`, with no NODE_PATH to help. */
function runInstalled(bin: string, args: string[], cwd: string): Promise<CliResult> {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  delete env.NODE_PATH;
  const child = spawn(bin, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b) => (stdout += b));
  child.stderr.on('data', (b) => (stderr += b));
  return new Promise((done) => child.on('close', (code, signal) => done({ code, signal, stdout, stderr })));
}

const HANDLERS: Record<string, string> = {
  'permanent.mjs': `import { PermanentError } from 'splitdance';
export default async (task) => { if (task.key === 'bad.txt') throw new PermanentError('not this one'); return { ok: true }; };\n`,
  'permanent.cjs': `const { PermanentError } = require('splitdance');
module.exports = async (task) => { if (task.key === 'bad.txt') throw new PermanentError('not this one'); return { ok: true }; };\n`,
  'permanent.ts': `import { PermanentError } from 'splitdance';
export default async (task: { key: string }): Promise<{ ok: boolean }> => { if (task.key === 'bad.txt') throw new PermanentError('not this one'); return { ok: true }; };\n`,
  // Named only by a helper the handler imports, or imported only when a task runs.
  'nested.mjs': `import { fail } from './nested-lib.mjs';
export default async (task) => { if (task.key === 'bad.txt') fail(); return { ok: true }; };\n`,
  'nested-lib.mjs': `import { PermanentError } from 'splitdance';\nexport const fail = () => { throw new PermanentError('not this one'); };\n`,
  'dynamic.mjs': `export default async (task) => { const { PermanentError } = await import('splitdance'); if (task.key === 'bad.txt') throw new PermanentError('not this one'); return { ok: true }; };\n`,
  'missing.ts': `import thing from 'no-such-package-anywhere';\nexport default async () => thing;\n`,
  'missing.mjs': `import thing from 'no-such-package-anywhere';\nexport default async () => thing;\n`,
};

function check(install: () => string) {
  let bin = '';
  let handlers = '';
  beforeAll(() => {
    bin = install();
    handlers = tempDir('sd-handlers-'); // no node_modules here nor above it
    for (const [name, text] of Object.entries(HANDLERS)) writeFileSync(join(handlers, name), text);
  }, 900_000);

  it.each(['permanent.mjs', 'permanent.cjs', 'permanent.ts', 'nested.mjs', 'dynamic.mjs'])('runs a handler (%s) that imports PermanentError from splitdance', async (name) => {
    const work = tempDir('sd-work-');
    mkdirSync(join(work, 'src'));
    for (const f of ['bad.txt', 'good.txt']) writeFileSync(join(work, 'src', f), `${f}\n`);
    const r = await runInstalled(bin, ['run', 'src', '--handler', join(handlers, name), '--json'], work);
    expect(r.code, r.stderr).toBe(1);
    const attempts = r.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l)).filter((e) => e.event === 'attempt');
    // Failed at once, without the three retries: the error is splitdance's own PermanentError.
    expect(attempts.map((a) => [a.key, a.outcome, a.status, a.error])).toEqual(
      expect.arrayContaining([
        ['bad.txt', 'FAILED', 'FAILED', 'PermanentError: not this one'],
        ['good.txt', 'SUCCESS', 'SUCCESS', null],
      ]),
    );
    expect(attempts).toHaveLength(2);
  }, 60_000);

  it('a handler that fails to load (TypeScript through tsx, or ESM) is one line without --verbose, exit 2, nothing written', async () => {
    for (const name of ['missing.ts', 'missing.mjs']) {
      const work = tempDir('sd-work-');
      mkdirSync(join(work, 'src'));
      writeFileSync(join(work, 'src', 'a.txt'), 'a\n');
      const r = await runInstalled(bin, ['run', 'src', '--handler', join(handlers, name)], work);
      expect(r.code, name).toBe(2);
      expect(r.stderr.trim().split('\n'), name).toEqual([
        expect.stringMatching(/^splitdance: error: handler module .*missing\.(ts|mjs) failed to load: Error: Cannot find (module|package) 'no-such-package-anywhere'/),
      ]);
      expect(r.stderr, name).not.toContain('?namespace=');
      expect(readdirSync(work), name).toEqual(['src']);
    }
  }, 60_000);
}

describe('a globally installed splitdance (npm pack, installed as npm install -g lays it out)', () => check(globalLayout));
describe.runIf(process.env.SPLITDANCE_LONG === '1')('a globally installed splitdance (the real npm install -g, network)', () => check(realGlobalInstall));
