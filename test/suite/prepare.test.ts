import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, tempDir } from '../helpers/cli.js';

/**
 * Issue 41: `npm ci && npx splitdance …` in a fresh clone built the project twice: npm ci's
 * `prepare`, then npx's install of the project itself ran `prepare` again (17 s before a
 * 79 ms batch). `prepare` (scripts/prepare.mjs) builds only when the build is missing or older
 * than its sources. Here on a copy of the layout whose `build` script leaves a mark.
 */
const INPUTS = ['src/cli/main.ts', 'package-lock.json', 'tsconfig.json'];
const OUTPUTS = ['dist/index.js', 'dist/bundle/cli/main.mjs', 'splitdance.1'];

function project(): string {
  const root = tempDir();
  mkdirSync(join(root, 'scripts'));
  copyFileSync(join(ROOT, 'scripts/prepare.mjs'), join(root, 'scripts/prepare.mjs'));
  writeFileSync(join(root, 'package.json'), JSON.stringify({ name: 'p', private: true, scripts: { build: 'node -e "require(\'fs\').writeFileSync(\'built\', \'\')"' } }));
  for (const f of [...INPUTS, ...OUTPUTS]) {
    mkdirSync(dirname(join(root, f)), { recursive: true });
    writeFileSync(join(root, f), '');
  }
  return root;
}

const at = (root: string, files: string[], seconds: number) => {
  for (const f of files) utimesSync(join(root, f), seconds, seconds);
};

/** Runs `prepare` as npm does; whether it built. */
function prepare(root: string): boolean {
  execFileSync(process.execPath, ['scripts/prepare.mjs'], { cwd: root, stdio: 'ignore' });
  return existsSync(join(root, 'built'));
}

describe('npm prepare', () => {
  it('does not build when the build is newer than every source, and builds when it is missing or older', () => {
    const fresh = project();
    at(fresh, [...INPUTS, 'scripts/prepare.mjs', 'package.json', 'src/cli', 'src', 'scripts'], 1_000_000);
    at(fresh, OUTPUTS, 1_000_100);
    expect(prepare(fresh)).toBe(false);

    const edited = project();
    at(edited, [...INPUTS, 'scripts/prepare.mjs', 'package.json', 'src/cli', 'src', 'scripts'], 1_000_000);
    at(edited, OUTPUTS, 1_000_100);
    at(edited, ['src/cli/main.ts'], 1_000_200);
    expect(prepare(edited)).toBe(true);

    const unbuilt = project();
    execFileSync('rm', [join(unbuilt, 'dist/bundle/cli/main.mjs')]);
    expect(prepare(unbuilt)).toBe(true);
  });
});
