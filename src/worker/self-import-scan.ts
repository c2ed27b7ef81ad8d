/** Whether a handler's own files name `splitdance` as a module: only then is the resolve hook worth its start-up cost. */
import { readFileSync, statSync } from 'node:fs';
import { dirname, extname, resolve } from 'node:path';

/** A quoted module name: `splitdance` or a path in it (`'splitdance'`, `"splitdance/x"`, a template literal). */
const NAMES_SPLITDANCE = /(['"`])splitdance(\/[^'"`\n]*)?\1/;
/**
 * A quoted subpath import (`'#errs'`, mapped by package.json's "imports"): where it leads is not
 * followed, so it counts as naming the package (at worst the hook costs its 80 ms for nothing).
 */
const SUBPATH_IMPORT = /(['"`])#[\w@/.-]+\1/;
/** A quoted relative path: where the handler's own other files are named (imports, requires, anything else). */
const RELATIVE = /(['"`])(\.\.?\/[^'"`\n]*)\1/g;
/** What a relative name without its extension may be (CommonJS and TypeScript leave it out). */
const SUFFIXES = ['.js', '.mjs', '.cjs', '.ts', '.mts', '.cts', '/index.js', '/index.mjs', '/index.cjs', '/index.ts'];
const CODE = new Set(['.js', '.mjs', '.cjs', '.ts', '.mts', '.cts']);
const TS_FOR: Record<string, string> = { '.js': '.ts', '.mjs': '.mts', '.cjs': '.cts' };
/** Files read and paths looked up at most: past either, the handler is assumed to name it (the hook then costs its 80 ms). */
const MAX_FILES = 200;
const MAX_LOOKUPS = 4000;
/** Bytes read of a file at most: past that it is assumed to name it too. */
const MAX_BYTES = 4 << 20;

/**
 * Reads the handler and the code files it names by relative path, transitively, for a quoted
 * `splitdance`. Registering the resolve hook (`node:module` register) starts a loader thread
 * that every later import goes through: about 80 ms of each worker's start-up, measured. So it
 * is registered only where a handler's own files may ask for the package. Over-reads rather
 * than under-reads: any quoted relative path to a code file is followed, a string in a comment
 * counts, a subpath import (`#name`) counts, and a handler too big to read counts. Not seen: a
 * name computed at run time (`import(name)`), and a package of the project's own, linked into
 * node_modules, that imports splitdance without depending on it.
 */
export function namesSplitdance(entry: string): boolean {
  const tried = new Set<string>([entry]);
  const todo = [entry];
  let files = 0;
  while (todo.length) {
    const file = todo.pop()!;
    if (++files > MAX_FILES) return true;
    let text: string;
    try {
      if (statSync(file).size > MAX_BYTES) return true;
      text = readFileSync(file, 'utf8');
    } catch {
      continue; // not a file of ours: a name that only looked like a path
    }
    if (NAMES_SPLITDANCE.test(text) || SUBPATH_IMPORT.test(text)) return true;
    for (const m of text.matchAll(RELATIVE)) {
      const base = resolve(dirname(file), m[2]!);
      // TypeScript names its own files by what they compile to: './errs.js' is errs.ts.
      const ext = extname(base);
      const candidates = CODE.has(ext) ? [base, ...(TS_FOR[ext] ? [base.slice(0, -ext.length) + TS_FOR[ext]] : [])] : SUFFIXES.map((s) => base + s);
      for (const candidate of candidates) {
        if (tried.has(candidate)) continue;
        tried.add(candidate);
        if (tried.size > MAX_LOOKUPS) return true;
        if (isFile(candidate)) todo.push(candidate);
      }
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
