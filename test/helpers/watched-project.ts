// The batch the watch tests look at, in-process or through the binary.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectWithFiles } from './project.js';

/**
 * A project whose handler takes $SLEEP_MS and fails the keys ending in 0 or 5 (with an escape
 * sequence in the error, which nothing may print raw).
 */
export function watchedProject(n: number) {
  const p = projectWithFiles(n);
  const handlerFile = join(p.dir, 'h.mjs');
  writeFileSync(
    handlerFile,
    `export default async (task) => {
      await new Promise((r) => setTimeout(r, Number(process.env.SLEEP_MS)));
      if (process.env.FAIL_SOME && /[05]\\.log$/.test(task.key)) throw new Error('bad input in ' + task.key + '\\x1b[31m');
      return {};
    };\n`,
  );
  return { ...p, handlerFile };
}
