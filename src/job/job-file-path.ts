import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { UsageError } from '../errors.js';

/** The job file `run` reads from the current directory when --job is not given. */
export const JOB_FILE = 'splitdance.json';

/**
 * Where the run's job file is: --job, else ./splitdance.json if present, else none. Kept
 * apart from job-file.ts so a run without a job file never loads its validator (zod).
 */
export function findJobFile(flag: string | undefined, cwd: string): string | null {
  if (flag !== undefined) {
    const path = resolve(cwd, flag);
    if (!existsSync(path)) throw new UsageError(`job file ${flag} does not exist`);
    return path;
  }
  const implicit = resolve(cwd, JOB_FILE);
  return existsSync(implicit) ? implicit : null;
}

