import { existsSync } from 'node:fs';
import { extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { UsageError } from '../errors.js';
import type { Handler } from './handler-types.js';

const LOADABLE = new Set(['.js', '.mjs', '.cjs']);
const TYPESCRIPT = new Set(['.ts', '.mts', '.cts']);

/**
 * Imports a handler module once per worker. Runs only in worker processes: the
 * coordinator never imports handler code.
 */
export async function loadHandler(path: string): Promise<Handler> {
  const abs = resolve(path);
  if (!existsSync(abs)) throw new UsageError(`handler module ${path} does not exist; check the --handler path`);
  const ext = extname(abs);
  if (!LOADABLE.has(ext) && !TYPESCRIPT.has(ext)) {
    throw new UsageError(`handler module ${path} has the extension "${ext}"; give a .js, .mjs or .ts module`);
  }
  let mod: { default?: unknown };
  try {
    const url = pathToFileURL(abs).href;
    // TypeScript is compiled on the fly by tsx's loader API (Node 20 cannot strip types itself).
    mod = TYPESCRIPT.has(ext) ? await (await import('tsx/esm/api')).tsImport(url, import.meta.url) : await import(url);
  } catch (err) {
    const e = err as Error;
    throw new UsageError(`handler module ${path} failed to load: ${e.name}: ${e.message}`);
  }
  // A CommonJS module's `module.exports = fn` arrives as `default`; `exports.default = fn` as default.default.
  let fn = mod.default;
  if (fn && typeof fn === 'object' && typeof (fn as { default?: unknown }).default === 'function') {
    fn = (fn as { default: unknown }).default;
  }
  if (typeof fn !== 'function') {
    throw new UsageError(`handler module ${path} has no default export function; add \`export default async (task, ctx) => { … }\``);
  }
  return fn as Handler;
}
