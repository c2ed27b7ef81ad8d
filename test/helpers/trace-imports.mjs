// Preloaded with `node --import` by the start-up tests: records the URL of every module the
// process loads (ESM import or require, through the module hooks) to the file named by
// SPLITDANCE_TRACE_IMPORTS, one per line, so a test can say what a command's start-up loaded.
import { register } from 'node:module';

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
  register(`data:text/javascript,${encodeURIComponent(hooks)}`, { data: { out: process.env.SPLITDANCE_TRACE_IMPORTS } });
}
