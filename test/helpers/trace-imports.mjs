// Preloaded with `node --import` by the start-up tests: records the URL of every module the
// process loads (ESM import or require, through the module hooks) to the file named by
// SPLITDANCE_TRACE_IMPORTS, one per line, so a test can say what a command's start-up loaded;
// and at exit what the hooks do not see: the CommonJS modules that CommonJS modules required
// (from the require cache) and the Node built-in modules the process loaded, as `node:NAME` lines.
import { appendFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';
import { pathToFileURL } from 'node:url';

const hooks = `
import { appendFileSync } from 'node:fs';
let out = null;
export function initialize(data) { out = data.out; }
export async function load(url, context, next) {
  const loaded = await next(url, context);
  if (out && url.startsWith('file:')) appendFileSync(out, url + '\\n');
  return loaded;
}
`;
if (process.env.SPLITDANCE_TRACE_IMPORTS) {
  const out = process.env.SPLITDANCE_TRACE_IMPORTS;
  register(`data:text/javascript,${encodeURIComponent(hooks)}`, { data: { out } });
  process.on('exit', () => {
    const builtins = process.moduleLoadList.filter((m) => m.startsWith('NativeModule ') && !m.startsWith('NativeModule internal/'));
    const required = Object.keys(createRequire(import.meta.url).cache).map((f) => pathToFileURL(f).href);
    appendFileSync(out, [...required, ...builtins.map((m) => `node:${m.slice('NativeModule '.length)}`)].map((l) => `${l}\n`).join(''));
  });
}
