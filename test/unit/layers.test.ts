import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The layout shows the data flow `cli → job → split → store → coordinator/pool → worker`:
 * `cli/` parses flags and prints, the use cases live below it and never reach back up.
 * This reads every module's import specifiers (static, `export … from`, `import()`, with
 * TypeScript's own scanner) and fails on one that leads into src/cli from outside it.
 */
const SRC = resolve(import.meta.dirname, '../../src');
const CLI = join(SRC, 'cli');

function modules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return modules(path);
    return /\.[cm]?ts$/.test(e.name) && !e.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The relative specifiers of a module, resolved to absolute paths (packages are left out). */
function importsOf(file: string): { specifier: string; target: string }[] {
  const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return info.importedFiles
    .map((f) => f.fileName)
    .filter((s) => s.startsWith('.'))
    .map((specifier) => ({ specifier, target: resolve(dirname(file), specifier) }));
}

const inside = (path: string, dir: string) => path === dir || path.startsWith(dir + sep);

describe('layers', () => {
  const below = modules(SRC).filter((f) => !inside(f, CLI));

  it('finds the modules below the CLI and their imports', () => {
    // Guards the scan itself: a wrong root or a scanner that sees nothing would pass everything.
    expect(below.map((f) => relative(SRC, f))).toContain(join('run', 'run-batch.ts'));
    expect(importsOf(join(SRC, 'run', 'run-batch.ts')).map((i) => i.specifier)).toContain('../coordinator/coordinator.js');
  });

  it('no module outside src/cli imports from src/cli', () => {
    const offending = below.flatMap((file) =>
      importsOf(file)
        .filter((i) => inside(i.target, CLI))
        .map((i) => `${relative(SRC, file)} imports ${i.specifier}`),
    );
    expect(offending).toEqual([]);
  });
});
