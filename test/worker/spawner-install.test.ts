import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, tempDir } from '../helpers/cli.js';
import { SPAWNER_PROTOCOL } from '../../src/worker/spawner.js';

/**
 * The spawner helper ships as source with the package, and the install script builds it
 * wherever the shipped binary does not run or speaks another protocol version.
 */
function packageCopy(): { root: string; binary: string; check(): string } {
  const root = tempDir('sd-install-');
  for (const file of ['scripts/build-spawner.mjs', 'src/worker/spawner.c']) {
    mkdirSync(join(root, file, '..'), { recursive: true });
    copyFileSync(join(ROOT, file), join(root, file));
  }
  const binary = join(root, 'dist/native/spawner');
  mkdirSync(join(binary, '..'), { recursive: true });
  const check = () => spawnSync(binary, ['--check'], { encoding: 'utf8' }).stdout.trim();
  return { root, binary, check };
}

const install = (root: string) => execFileSync(process.execPath, [join(root, 'scripts/build-spawner.mjs'), '--if-needed'], { cwd: root, stdio: 'pipe' });

describe('the spawner helper at install', () => {
  it('ships its source and build script, and the install script builds only if needed', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    expect(pkg.scripts.install).toBe('node scripts/build-spawner.mjs --if-needed');
    const packed = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8' }));
    const files = packed[0].files.map((f: { path: string }) => f.path);
    expect(files).toEqual(expect.arrayContaining(['src/worker/spawner.c', 'scripts/build-spawner.mjs']));
  }, 60_000);

  it('rebuilds a shipped binary of another protocol version', () => {
    const p = packageCopy();
    writeFileSync(p.binary, '#!/bin/sh\necho "splitdance-spawner protocol 1"\n');
    chmodSync(p.binary, 0o755);
    install(p.root);
    expect(p.check()).toBe(SPAWNER_PROTOCOL);
    // The install's check is stamped beside the rebuilt binary, so workers need not run it again.
    const st = statSync(p.binary);
    expect(JSON.parse(readFileSync(`${p.binary}.checked`, 'utf8'))).toMatchObject({ protocol: SPAWNER_PROTOCOL, size: st.size, ino: st.ino });
  });

  it('rebuilds a shipped binary that does not run here, and keeps one that does', () => {
    const p = packageCopy();
    writeFileSync(p.binary, Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0])); // an ELF header of nothing
    chmodSync(p.binary, 0o755);
    install(p.root);
    expect(p.check()).toBe(SPAWNER_PROTOCOL);
    const built = statSync(p.binary);
    install(p.root);
    const kept = statSync(p.binary);
    expect([kept.ino, kept.mtimeMs]).toEqual([built.ino, built.mtimeMs]);
  });
});
