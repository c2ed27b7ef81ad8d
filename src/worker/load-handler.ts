import { existsSync } from 'node:fs';
import Module, { register } from 'node:module';
import { extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { UsageError } from '../errors.js';
import { inPackage } from '../package-root.js';
import type { BatchHandler, Handler } from './handler-types.js';
import { namesSplitdance } from './self-import-scan.js';
import { describeLocation, syntaxLocations } from './syntax-location.js';

const LOADABLE = new Set(['.js', '.mjs', '.cjs']);
let cjsResolving = false;
let hooked = false;

/**
 * Makes `'splitdance'` in a handler find this package wherever it is installed, once per
 * process: `import` through a resolve hook (self-resolve.ts), `require` (a CommonJS handler,
 * or TypeScript that tsx compiles to CommonJS) through the CommonJS resolver, each only
 * where the handler's own lookup found nothing. The import hook is registered only once some
 * handler's files name the package (self-import-scan.ts): it costs each worker ~80 ms.
 */
function resolveSelf(handler: string): void {
  // Both compiled files, whether this module runs from them or from the CLI's bundle.
  if (!hooked && namesSplitdance(handler)) {
    hooked = true;
    register(pathToFileURL(inPackage('dist/worker/self-resolve.js')));
  }
  if (cjsResolving) return;
  cjsResolving = true;
  const self = inPackage('dist/index.js');
  const cjs = Module as unknown as { _resolveFilename: (request: string, ...rest: unknown[]) => string };
  const resolveFilename = cjs._resolveFilename;
  cjs._resolveFilename = function (this: unknown, request: string, ...rest: unknown[]): string {
    try {
      return resolveFilename.call(this, request, ...rest);
    } catch (err) {
      if (request === 'splitdance' && (err as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND') return self;
      throw err;
    }
  };
}
const TYPESCRIPT = new Set(['.ts', '.mts', '.cts']);

/** A loaded handler module: its default export, and its `batch` export (many tasks per call) with its `maxItems`. */
export interface LoadedHandler {
  fn: Handler | null;
  batch: BatchHandler | null;
  /** The module's own bound on a `batch` call's tasks, if it exports one. */
  maxItems: number | null;
}

/**
 * Imports a handler module once per worker. Runs only in worker processes: the
 * coordinator never imports handler code. A module exports `default` (one task per call),
 * `batch` (many, SPEC §10), or both.
 */
export async function loadHandler(path: string): Promise<LoadedHandler> {
  const abs = resolve(path);
  if (!existsSync(abs)) throw new UsageError(`handler module ${path} does not exist; check the --handler path`);
  const ext = extname(abs);
  if (!LOADABLE.has(ext) && !TYPESCRIPT.has(ext)) {
    throw new UsageError(`handler module ${path} has the extension "${ext}"; give a .js, .mjs or .ts module`);
  }
  let mod: { default?: unknown; batch?: unknown; maxItems?: unknown };
  resolveSelf(abs);
  try {
    const url = pathToFileURL(abs).href;
    // TypeScript is compiled on the fly by tsx's loader API (Node 20 cannot strip types itself).
    mod = TYPESCRIPT.has(ext) ? await (await import('tsx/esm/api')).tsImport(url, import.meta.url) : await import(url);
  } catch (err) {
    throw new UsageError(`handler module ${path} ${loadError(err, abs)}`);
  }
  // A CommonJS module's `module.exports = fn` arrives as `default`; `exports.default = fn` as
  // default.default; `exports.batch = fn` as default.batch.
  let fn = mod.default;
  const cjs = fn && typeof fn === 'object' ? (fn as { default?: unknown; batch?: unknown; maxItems?: unknown }) : null;
  if (cjs && typeof cjs.default === 'function') fn = cjs.default;
  const batch = typeof mod.batch === 'function' ? mod.batch : typeof cjs?.batch === 'function' ? cjs.batch : null;
  const maxItems = mod.maxItems ?? cjs?.maxItems ?? null;
  if (typeof fn !== 'function' && batch === null) {
    throw new UsageError(`handler module ${path} has no default export function; add \`export default async (task, ctx) => { … }\` (or \`export async function batch(tasks, ctx)\` for many tasks per call)`);
  }
  if (maxItems !== null && !(Number.isInteger(maxItems) && (maxItems as number) >= 1)) {
    throw new UsageError(`handler module ${path} exports maxItems = ${JSON.stringify(maxItems)}; give a whole number of at least 1`);
  }
  return { fn: typeof fn === 'function' ? (fn as Handler) : null, batch: batch as BatchHandler | null, maxItems: maxItems as number | null };
}

/**
 * Why a module failed to load (SPEC §9), after its name: its error's first line, without the query tsx's
 * loader puts on the URLs it names (`?namespace=…`), which points at no file a person could
 * open. A syntax error instead names where it is, a line of its own per place (at most a few):
 * `handler.ts:3:12: Unexpected "="`, which the first line of esbuild's and of an ES module's
 * error leave out.
 */
function loadError(err: unknown, modulePath: string): string {
  const e = err instanceof Error ? err : new Error(String(err));
  const { shown, more } = syntaxLocations(e, modulePath);
  if (shown.length) {
    const places = shown.map((l) => `\n  ${describeLocation(l)}`).join('');
    return `has a syntax error:${places}${more ? `\n  … and ${more} more` : ''}`;
  }
  const first = e.message.split('\n').find((l) => l.trim() !== '') ?? '';
  return `failed to load: ${e.name}: ${first.replace(/\?namespace=[^\s'"]*/g, '').trim()}`;
}
