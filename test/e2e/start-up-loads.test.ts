/** What the binary's start-up loads: only what the command needs, so a start-up gain cannot silently regress. */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { BIN, ROOT, runCli, tempDir } from '../helpers/cli.js';
import { mainIn } from '../helpers/in-process-cli.js';

const TRACE = join(ROOT, 'test/helpers/trace-imports.mjs');

/** What each file of the CLI's bundle holds (scripts/bundle.mjs writes it): compiled modules, by path from the root. */
const BUNDLE: { outputs: Record<string, { inputs: Record<string, unknown> }> } = JSON.parse(readFileSync(join(ROOT, 'dist/bundle-meta.json'), 'utf8'));

/**
 * The modules `splitdance ARGS` loaded in `cwd`: packages by name (bundled into a file it
 * loaded, or loaded as their own files), our own compiled modules by path under dist/ (those
 * a bundle file it loaded holds, and any it loaded apart), and Node's built-in modules.
 */
function loadedBy(
  args: string[],
  cwd: string,
): { packages: Set<string>; packagesApart: Set<string>; own: string[]; builtins: Set<string>; bundleFiles: string[]; apart: string[] } {
  const out = join(cwd, `trace-${args.join('-').replace(/\W+/g, '_')}.txt`);
  rmSync(out, { force: true });
  execFileSync(process.execPath, ['--import', TRACE, BIN, ...args], { cwd, env: { ...process.env, SPLITDANCE_TRACE_IMPORTS: out }, stdio: 'ignore' });
  const lines = readFileSync(out, 'utf8').split('\n').filter(Boolean);
  const builtins = new Set(lines.filter((l) => l.startsWith('node:')).map((l) => l.slice('node:'.length)));
  const files = lines.filter((l) => l.startsWith('file:')).map((url) => relative(ROOT, fileURLToPath(url)));
  const bundled = files.filter((f) => f.startsWith(join('dist', 'bundle') + '/'));
  const held = bundled.flatMap((f) => {
    const inputs = BUNDLE.outputs[f]?.inputs;
    if (!inputs) throw new Error(`${f} is not in dist/bundle-meta.json: rebuild`);
    return Object.keys(inputs);
  });
  const packageOf = (f: string) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(f)?.[1] ?? [];
  const packages = new Set([...files, ...held].flatMap(packageOf));
  const packagesApart = new Set(files.flatMap(packageOf));
  const apart = [...new Set(files.filter((f) => f.startsWith('dist/') && !bundled.includes(f)))];
  const own = [...new Set([...held.filter((f) => f.startsWith('dist/')), ...apart])].map((f) => relative('dist', f));
  return { packages, packagesApart, own, builtins, bundleFiles: bundled, apart };
}

/** What no read-only command needs: the runner, the job file's schema, the report, PostgreSQL, Prometheus. */
const NOT_FOR_READING = {
  packages: ['zod', 'pg', 'prom-client', 'cli-progress', 'tsx', 'playwright-core'],
  folders: ['run/', 'coordinator/', 'pool/', 'worker/', 'report/', 'split/', 'template/', 'store/postgres/pg-store.js', 'job/job-file.js', 'job/job-file-schema.js', 'job/plan-run.js', 'job/plan-checks.js'],
};

describe('start-up loads only what the command needs', () => {
  let dir: string;
  beforeAll(async () => {
    dir = tempDir('sd-startup-');
    mkdirSync(join(dir, 'src'));
    writeFileSync(join(dir, 'src', 'a.txt'), 'a\n');
    const r = await mainIn(dir, ['run', 'src', '--exec', 'true', '--quiet']);
    expect(r.code, r.stderr).toBe(0);
  });

  it('sees what it traces: `run` loads the store, the runner and the coordinator, and starts processes', () => {
    // Guards the tracer: a trace that saw nothing would pass every check below.
    const { packages, own, builtins } = loadedBy(['run', 'src', '--exec', 'true', '--quiet'], dir);
    expect(packages).toContain('better-sqlite3');
    expect(packages).toContain('commander'); // bundled: seen through the bundle's metafile
    expect(own).toContain(join('coordinator', 'coordinator.js'));
    expect(own).toContain(join('run', 'start-run.js'));
    expect(builtins).toContain('child_process');
    expect(builtins).toContain('crypto'); // the batch's name hashes its source
  });

  it('a command runs from its bundle: its modules and its pure-JS packages come from the bundle files, .mjs each', () => {
    for (const args of [['status'], ['--version'], ['run', 'src', '--exec', 'true', '--quiet']]) {
      const { own, bundleFiles, apart, packagesApart } = loadedBy(args, dir);
      expect(bundleFiles.length, args.join(' ')).toBeGreaterThan(1); // the entry and its chunks
      expect(apart, args.join(' ')).toEqual([]);
      expect(own, args.join(' ')).toContain(join('cli', 'main.js'));
      // Only the native driver is loaded as a package's own files (scripts/bundle.mjs), its addon named
      // directly (src/store/sqlite/addon.ts): not the `bindings` package that searches for it.
      expect([...packagesApart].filter((p) => p !== 'better-sqlite3'), args.join(' ')).toEqual([]);
      // A `.js` module makes Node 20 look up its package scope on every load; an `.mjs` does not.
      expect(bundleFiles.filter((f) => !f.endsWith('.mjs')), args.join(' ')).toEqual([]);
    }
  });

  it("a module handler's worker processes start from the bundle's worker entry (the trace follows them: fork passes --import on)", () => {
    writeFileSync(join(dir, 'noop.mjs'), 'export default async () => {};\n');
    const { own, apart } = loadedBy(['run', 'src', '--handler', 'noop.mjs', '--batch', 'handler', '--quiet'], dir);
    expect(own).toContain(join('worker', 'child-main.js'));
    // A handler that does not name 'splitdance' gets no resolve hook: no loader thread to start (~80 ms a worker).
    expect(apart).toEqual([]);
  });

  it("a module handler that imports 'splitdance' gets the resolve hook, loaded apart (it runs on the loader's own thread)", () => {
    writeFileSync(join(dir, 'named.mjs'), "import { PermanentError } from 'splitdance';\nexport default async () => String(PermanentError);\n");
    const { own, apart } = loadedBy(['run', 'src', '--handler', 'named.mjs', '--batch', 'named', '--quiet'], dir);
    expect(own).toContain(join('worker', 'child-main.js'));
    // (Beside it, the package the handler imports: dist/index.js and what it exports.)
    expect(apart).toContain(join('dist', 'worker', 'self-resolve.js'));
  });

  for (const args of [['status'], ['status', '--json'], ['tasks'], ['show', 'a.txt'], ['batches']]) {
    it(`${args.join(' ')} loads no runner, no job-file schema, no report, no PostgreSQL and no Prometheus`, () => {
      const { packages, own } = loadedBy(args, dir);
      expect([...packages].filter((p) => NOT_FOR_READING.packages.includes(p))).toEqual([]);
      expect(own.filter((f) => NOT_FOR_READING.folders.some((x) => f.startsWith(x)))).toEqual([]);
      expect(packages).toContain('better-sqlite3'); // it did read the store
    });
  }

  for (const args of [['status'], ['status', '--json'], ['batches']]) {
    it(`${args.join(' ')} loads neither child_process nor crypto: it starts no process and hashes nothing`, () => {
      const { builtins } = loadedBy(args, dir);
      expect(builtins.size).toBeGreaterThan(0); // the tracer saw built-ins
      expect([...builtins].filter((b) => b === 'child_process' || b === 'crypto')).toEqual([]);
    });
  }

  it('--version loads the CLI shell only: not commander, no program, no store, no command, no colours or units', () => {
    const { packages, own } = loadedBy(['--version'], dir);
    expect([...packages]).toEqual([]);
    expect(own).toContain(join('cli', 'main.js'));
    expect(own.filter((f) => f.startsWith('cli/commands/') || f.startsWith('cli/help/') || f === join('cli', 'program.js') || f.startsWith('store/sqlite/') || NOT_FOR_READING.folders.some((x) => f.startsWith(x)))).toEqual([]);
  });

  it('--version and -V print the package version and exit 0, as commander did', async () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const r = await runCli([flag], { cwd: dir });
      expect([r.code, r.stdout, r.stderr]).toEqual([0, `${version}\n`, '']);
    }
  });

  it('--version with anything else is parsed as usual (commander loads)', () => {
    const { packages } = loadedBy(['--version', '--quiet'], dir);
    expect([...packages]).toEqual(['commander']);
  });
});
