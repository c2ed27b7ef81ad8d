import { spawnSync } from 'node:child_process';
import { isAbsolute, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where a module's syntax error is, and what it is: `file:line:column: message`. */
export interface SyntaxLocation {
  file: string;
  line: number;
  /** 1-based; null when the compiler named only the line. */
  column: number | null;
  message: string;
}

/** esbuild's errors (a TypeScript handler, through tsx) named in a message at most; the rest are counted. */
const SHOWN = 3;

/**
 * The locations a load error names, read from its text: esbuild's `Transform failed with N
 * errors:` lists each as `file:line:col: ERROR: message` on the lines after the first (a
 * TypeScript handler); V8's SyntaxError of a CommonJS module has `file:line`, the source line
 * and a caret above its stack. An ES module's SyntaxError names no place at all (Node 20
 * keeps it where no code can read it), so that one module is checked again with `node
 * --check`, which prints it the CommonJS way: only after a failure, and only this file.
 */
export function syntaxLocations(err: Error, modulePath: string): { shown: SyntaxLocation[]; more: number } {
  // esbuild counts columns from 0, editors and V8 from 1.
  const esbuild = [...err.message.matchAll(/^(.+?):(\d+):(\d+): ERROR: (.*)$/gm)].map((m) => ({ file: m[1]!, line: Number(m[2]), column: Number(m[3]) + 1, message: m[4]! }));
  if (esbuild.length) return { shown: esbuild.slice(0, SHOWN), more: Math.max(0, esbuild.length - SHOWN) + Math.max(0, totalOf(err.message) - esbuild.length) };
  if (err.name !== 'SyntaxError') return { shown: [], more: 0 };
  // A SyntaxError thrown at run time (JSON.parse at the top of the module) has no place: --check then finds none.
  const own = v8Location(err.stack ?? '', err.message) ?? (/\.[cm]?js$/.test(modulePath) ? v8Location(checkSyntax(modulePath), err.message) : null);
  return { shown: own ? [own] : [], more: 0 };
}

/** `Transform failed with 12 errors:` names the count, and esbuild may list fewer. */
function totalOf(message: string): number {
  const m = /^Transform failed with (\d+) errors?:/.exec(message);
  return m ? Number(m[1]) : 0;
}

/** `/path/h.js:3` then the source line and a caret under the column, as V8 prints a SyntaxError. */
function v8Location(text: string, message: string): SyntaxLocation | null {
  const lines = text.split('\n');
  const at = /^(\/.*|file:\/\/.*):(\d+)$/.exec(lines[0] ?? '');
  if (!at) return null;
  const caret = (lines[2] ?? '').search(/\^/);
  const file = at[1]!.startsWith('file://') ? fileURLToPath(at[1]!) : at[1]!;
  return { file, line: Number(at[2]), column: caret >= 0 ? caret + 1 : null, message };
}

/** `node --check FILE`'s report of the syntax error (empty when it finds none). */
function checkSyntax(path: string): string {
  const r = spawnSync(process.execPath, ['--check', path], { encoding: 'utf8', timeout: 10_000, stdio: ['ignore', 'ignore', 'pipe'] });
  return r.status === 0 ? '' : (r.stderr ?? '');
}

/** A location as a person opens it: relative to the working folder when inside it. */
export function describeLocation(l: SyntaxLocation, cwd = process.cwd()): string {
  const rel = relative(cwd, l.file);
  const file = rel !== '' && !rel.startsWith('..') && !isAbsolute(rel) ? rel : l.file;
  return `${file}:${l.line}${l.column === null ? '' : `:${l.column}`}: ${l.message}`;
}
