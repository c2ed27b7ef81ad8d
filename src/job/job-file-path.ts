import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { UsageError } from '../errors.js';

/** The job file `run` reads from the current directory when --job is not given. */
const JOB_FILE = 'splitdance.json';

/** The run's job file: where it is, and how a person named it (`./splitdance.json`, or --job's own text). */
export interface JobFileChoice {
  path: string;
  shown: string;
}

/**
 * Where the run's job file is: --job, else ./splitdance.json if present and the command line
 * gives no handler (--exec, --handler), else none. A one-liner with its own handler never
 * takes another's output, retries or timeout from a job file that happens to be in the folder:
 * `skipped` names the file it leaves alone, for the run to say so. Kept apart from
 * job-file.ts so a run without a job file never loads its validator (zod).
 */
export function findJobFile(flag: string | undefined, cwd: string, handlerGiven: boolean): { used: JobFileChoice | null; skipped: string | null } {
  if (flag !== undefined) {
    const path = resolve(cwd, flag);
    if (!existsSync(path)) throw new UsageError(`job file ${flag} does not exist`);
    return { used: { path, shown: flag }, skipped: null };
  }
  const implicit = resolve(cwd, JOB_FILE);
  if (!existsSync(implicit)) return { used: null, skipped: null };
  const shown = `./${JOB_FILE}`;
  return handlerGiven ? { used: null, skipped: shown } : { used: { path: implicit, shown }, skipped: null };
}

/** The note a run gives when it leaves ./splitdance.json unread. */
export function skippedJobFileNote(shown: string): string {
  return `not using ${shown}: the command line gives the handler; --job ${JOB_FILE} uses it`;
}
