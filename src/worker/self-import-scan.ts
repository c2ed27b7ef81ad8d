/** Whether a handler's own files name `splitdance` as a module: only then is the resolve hook worth its start-up cost. */
import { readFileSync, statSync } from 'node:fs';
import { dirname, extname, resolve } from 'node:path';

/** A quoted module name: `splitdance` or a path in it (`'splitdance'`, `"splitdance/x"`, a template literal). */
const NAMES_SPLITDANCE = /(['"`])splitdance(\/[^'"`\n]*)?\1/;
/** A quoted relative path: where the handler's own other files are named (imports, requires, anything else). */
const RELATIVE = /(['"`])(\.\.?\/[^'"`\n]*)\1/g;
/** What a relative name without its extension may be (CommonJS and TypeScript leave it out). */
const SUFFIXES = ['', '.js', '.mjs', '.cjs', '.ts', '.mts', '.cts', '/index.js', '/index.mjs', '/index.cjs', '/index.ts'];
const TS_FOR: Record<string, string> = { '.js': '.ts', '.mjs': '.mts', '.cjs': '.cts' };
/** Files read at most: a handler with more is assumed to name it (the hook then costs its 0.1 s). */
const MAX_FILES = 200;
/** Bytes read of a file at most: past that it is assumed to name it too. */
const MAX_BYTES = 4 << 20;

/**
 * Reads the handler and the files it names by relative path, transitively, for a quoted
 * `splitdance`. Registering the resolve hook (`node:module` register) starts a loader thread
 * that every later import goes through: about 80 ms of each worker's start-up, measured. So it
 * is registered only where a handler's own files ask for the package; a name computed at run
 * time (`import(name)`) is not seen. Over-reads rather than under-reads: any quoted relative
 * path is followed, a string in a comment counts, and a handler too big to read counts.
 */
export function namesSplitdance(entry: string): boolean {
  const seen = new Set<string>();
  const todo = [entry];
  while (todo.length) {
    const file = todo.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    if (seen.size > MAX_FILES) return true;
    let text: string;
    try {
      if (statSync(file).size > MAX_BYTES) return true;
      text = readFileSync(file, 'utf8');
    } catch {
      continue; // not a file of ours: a name that only looked like a path
    }
    if (NAMES_SPLITDANCE.test(text)) return true;
    for (const m of text.matchAll(RELATIVE)) {
      const base = resolve(dirname(file), m[2]!);
      // TypeScript names its own files by what they compile to: './errs.js' is errs.ts.
      const typescript = TS_FOR[extname(base)];
      const candidates = SUFFIXES.map((suffix) => base + suffix);
      if (typescript) candidates.push(base.slice(0, -extname(base).length) + typescript);
      for (const candidate of candidates) if (!seen.has(candidate) && isFile(candidate)) todo.push(candidate);
    }
  }
  return false;
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
