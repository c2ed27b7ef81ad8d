/**
 * A module resolve hook (node:module `register`) for the worker process: a handler's
 * `import … from 'splitdance'` finds this very package wherever splitdance is installed (a
 * global `npm install -g`, npx, a checkout), not only when the handler's own folder has it
 * in a node_modules. The handler's own resolution goes first, so a project that installs
 * splitdance itself keeps its copy. Runs on Node's loader thread: no imports of our own.
 */
const SELF = new URL('../index.js', import.meta.url).href;

interface ResolveContext {
  parentURL?: string;
  conditions: string[];
}
type NextResolve = (specifier: string, context: ResolveContext) => Promise<{ url: string; format?: string | null; shortCircuit?: boolean }>;

export async function resolve(specifier: string, context: ResolveContext, next: NextResolve) {
  if (specifier !== 'splitdance') return next(specifier, context);
  try {
    return await next(specifier, context);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw err;
    return { url: SELF, format: 'module', shortCircuit: true };
  }
}
