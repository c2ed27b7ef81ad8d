import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';

/**
 * What `npm pack` ships, and nothing else: the built code and its types for every source
 * module (no source maps, which would point at sources the package does not have), the
 * CLI's and the worker's bundle (scripts/bundle.mjs; not its metafile) with the license texts of the
 * packages bundled into it, the bin,
 * the man page, the docs the README links, the migrations, the spawner's C source and its
 * install script, the schema, LICENSE and CHANGELOG.
 */
function packed(): string[] {
  const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  return (JSON.parse(out) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path).sort();
}

/** Files under `dir` (relative to the root), recursively. */
function under(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .map((f) => join(dir, f))
    .filter((f) => statSync(join(ROOT, f)).isFile());
}

describe('npm pack', () => {
  it('ships the built modules with their types, the docs, the man page and nothing else', () => {
    const files = packed();
    const modules = under('src')
      .filter((f) => f.endsWith('.ts'))
      .map((f) => f.replace(/^src\//, 'dist/').replace(/\.ts$/, ''));
    const bundle = JSON.parse(readFileSync(join(ROOT, 'dist/bundle-meta.json'), 'utf8')) as { outputs: Record<string, unknown> };
    const expected = [
      'CHANGELOG.md',
      'LICENSE',
      'README.md',
      'package.json',
      'splitdance.1',
      'splitdance.schema.json',
      'bin/splitdance.js',
      'scripts/build-spawner.mjs',
      'src/worker/spawner.c',
      ...under('docs').filter((f) => f.endsWith('.md')),
      ...under('src/store').filter((f) => /\/migrations\/\d+_[\w-]+\.sql$/.test(f)),
      ...modules.flatMap((m) => [`${m}.js`, `${m}.d.ts`]),
      ...Object.keys(bundle.outputs),
      'dist/bundle/THIRD-PARTY-LICENSES.txt',
      ...files.filter((f) => f === 'dist/native/spawner'),
    ].sort();
    expect(files).toEqual(expected);
    expect(files.filter((f) => f.endsWith('.map'))).toEqual([]);
  });

  it('names its man page, license and bin, and they are among the files', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { man: string; license: string; bin: Record<string, string> };
    const files = packed();
    expect(pkg.license).toBe('MIT');
    expect(readFileSync(join(ROOT, 'LICENSE'), 'utf8')).toMatch(/^MIT License/);
    expect(files).toContain(pkg.man.replace(/^\.\//, ''));
    expect(files).toContain(pkg.bin.splitdance);
  });
});
