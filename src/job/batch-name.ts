import { createHash } from 'node:crypto';
import { basename } from 'node:path';

/** The default batch name: the source's base name and a hash of its absolute path, so a re-run resumes it. */
export function defaultBatchName(absSource: string): string {
  const hash = createHash('sha256').update(absSource).digest('hex').slice(0, 8);
  const base = basename(absSource).replace(/[^\p{L}\p{N}._-]+/gu, '_') || 'root';
  return `${base}-${hash}`;
}

/** Expands `{date}` to the local date, YYYY-MM-DD (for `--batch 'nightly-{date}'`). */
export function expandBatchName(name: string, now = new Date()): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  const date = `${now.getFullYear()}-${pad(now.getMonth() + 1)}-${pad(now.getDate())}`;
  return name.replace(/\{date\}/g, date);
}
