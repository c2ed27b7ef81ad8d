import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The layout is the data flow, one folder per stage, every arrow pointing down (STYLE.md):
 * `cli → report → run → coordinator → pool → job → worker → output → template / split /
 * status → store → ground (src/*.ts)`. A module may import its own folder and the floors
 * below it; folders on one floor do not import each other; and no modules import each other
 * in a circle. This reads every module's import specifiers (static, `export … from`, type-only,
 * `import()`, with TypeScript's own scanner), so an upward import or a circle fails here.
 */
const SRC = resolve(import.meta.dirname, '../../src');

/** Top to bottom; folders sharing a floor are listed together. */
const FLOORS: readonly (readonly string[])[] = [
  ['cli'],
  ['report'],
  ['run'],
  ['coordinator'],
  ['pool'],
  ['job'],
  ['worker'],
  ['output'],
  ['template', 'split', 'status'],
  ['store'],
  ['(ground)'],
];

/** The package's entry (what `import 'splitdance'` gives a handler) re-exports from any floor. */
const ENTRY = join(SRC, 'index.ts');

function modules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return modules(path);
    return /\.[cm]?ts$/.test(e.name) && !e.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The relative specifiers of a module, resolved to the absolute paths of their sources (packages are left out). */
function importsOf(file: string): { specifier: string; target: string }[] {
  const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return info.importedFiles
    .map((f) => f.fileName)
    .filter((s) => s.startsWith('.'))
    .map((specifier) => ({ specifier, target: resolve(dirname(file), specifier).replace(/\.js$/, '.ts') }));
}

/** The folder of a module under src/ ('(ground)' for src/*.ts). */
const folderOf = (file: string) => {
  const parts = relative(SRC, file).split(sep);
  return parts.length > 1 ? parts[0]! : '(ground)';
};
const floorOf = (folder: string) => FLOORS.findIndex((f) => f.includes(folder));

/** The module-level circles of an import graph (Tarjan's strongly connected components of two or more). */
function circles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const c: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        c.push(w);
      } while (w !== v);
      if (c.length > 1) found.push(c.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe('layers', () => {
  const all = modules(SRC);
  const graph = new Map(all.map((f) => [f, importsOf(f).map((i) => i.target)]));

  it('finds every module and its imports, and places every folder on a floor', () => {
    // Guards the scan itself: a wrong root or a scanner that sees nothing would pass everything.
    expect(all.map((f) => relative(SRC, f))).toContain(join('run', 'run-batch.ts'));
    expect(importsOf(join(SRC, 'run', 'run-batch.ts')).map((i) => i.specifier)).toContain('../coordinator/coordinator.js');
    const unplaced = [...new Set(all.map(folderOf))].filter((f) => floorOf(f) < 0);
    expect(unplaced, 'a new folder needs its floor in FLOORS (and in STYLE.md)').toEqual([]);
  });

  it('no module imports a higher floor, or another folder of its own floor', () => {
    const offending = all
      .filter((f) => f !== ENTRY)
      .flatMap((file) =>
        importsOf(file)
          .filter((i) => {
            const from = folderOf(file);
            const to = folderOf(i.target);
            return from !== to && floorOf(to) <= floorOf(from);
          })
          .map((i) => `${relative(SRC, file)} (${folderOf(file)}) imports ${i.specifier} (${folderOf(i.target)})`),
      );
    expect(offending).toEqual([]);
  });

  it('no modules import each other in a circle', () => {
    expect(circles(graph).map((c) => c.map((f) => relative(SRC, f)).join(' → '))).toEqual([]);
  });

  it('no command imports another command', () => {
    const commands = join(SRC, 'cli', 'commands');
    const offending = all
      .filter((f) => dirname(f) === commands)
      .flatMap((file) => importsOf(file).filter((i) => dirname(i.target) === commands).map((i) => `${relative(SRC, file)} imports ${i.specifier}`));
    expect(offending).toEqual([]);
  });

  it('catches what it is for: an upward import, a sibling import and a circle', () => {
    // The rules above on a made-up graph, so that a check that can no longer fail is noticed.
    const fake = (path: string) => join(SRC, path);
    const g = new Map([
      [fake('store/a.ts'), [fake('store/b.ts')]],
      [fake('store/b.ts'), [fake('store/a.ts')]],
      [fake('job/c.ts'), [fake('store/a.ts')]],
    ]);
    expect(circles(g)).toHaveLength(1);
    expect(floorOf(folderOf(fake('store/a.ts')))).toBeGreaterThan(floorOf(folderOf(fake('job/c.ts'))));
    expect(floorOf('split')).toBe(floorOf('status'));
  });
});
