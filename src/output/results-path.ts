/**
 * `--results DIR` (GNU parallel's layout): each finished task's files in `DIR/1/NAME/`, where
 * `1` is the input source's number (a batch has one) and NAME is the task's key as one folder
 * name. Keys are data: whatever a key holds, NAME is a single name inside `DIR/1`, never `.`,
 * `..` or empty, at most NAME_MAX bytes, and distinct keys get distinct names.
 */
import { createHash } from '../crypto-on-use.js';
import { accessSync, constants, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { UsageError } from '../errors.js';

/** The files of one task, as parallel names them. */
export const RESULT_FILES = { out: 'stdout', err: 'stderr', seq: 'seq' } as const;

/** The input source level of parallel's layout: always 1, a batch has one source. */
export const SOURCE_LEVEL = '1';

/** Linux's NAME_MAX, in bytes. */
const NAME_MAX = 255;
/** What a name cut to fit keeps: its readable start, then `\#` and 16 hex digits of the key's hash. */
const HASHED_BYTES = NAME_MAX - 18;

/**
 * A key as one folder name. As parallel: `\` is `\\`, `/` is `\_`, a tab `\t`, a NUL `\0`.
 * Beyond parallel (whose names can be `.`, `..`, empty, or cut to one another's): a newline is
 * `\n` and any other control character `\xHH`; `.`, `..` and the empty key are `\.`, `\..`
 * and `\` (a backslash of the key is always doubled, so none of these comes from another key);
 * a name longer than NAME_MAX keeps its first bytes (never half an escape or a character) and
 * ends with `\#` and 16 hex digits of the key's SHA-256.
 */
export function resultsName(key: string): string {
  if (key === '') return '\\';
  if (key === '.' || key === '..') return `\\${key}`;
  const units = Array.from(key, escapeChar);
  const name = units.join('');
  if (Buffer.byteLength(name) <= NAME_MAX) return name;
  let kept = '';
  let bytes = 0;
  for (const u of units) {
    const b = Buffer.byteLength(u);
    if (bytes + b > HASHED_BYTES) break;
    kept += u;
    bytes += b;
  }
  return `${kept}\\#${createHash('sha256').update(key, 'utf8').digest('hex').slice(0, 16)}`;
}

function escapeChar(ch: string): string {
  switch (ch) {
    case '\\':
      return '\\\\';
    case '/':
      return '\\_';
    case '\t':
      return '\\t';
    case '\0':
      return '\\0';
    case '\n':
      return '\\n';
  }
  const code = ch.codePointAt(0)!;
  return code < 0x20 || code === 0x7f ? `\\x${code.toString(16).padStart(2, '0')}` : ch;
}

/**
 * `--results DIR` (or the job file's "results"), absolute, checked before anything is written:
 * a folder this user can write in, or a path whose nearest existing folder is one (DIR is
 * made when the run starts). Anything else there is refused.
 */
export function checkResultsDir(dir: string, field: string): string {
  let at = dir;
  for (;;) {
    let st;
    try {
      st = statSync(at);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' && dirname(at) !== at) {
        at = dirname(at);
        continue;
      }
      throw new UsageError(`${field} ${dir} cannot be used: ${(err as Error).message}`);
    }
    if (!st.isDirectory()) {
      throw new UsageError(at === dir ? `${field} ${dir} is not a folder; give a folder for the results (it is made when missing)` : `${field} ${dir} cannot be made: ${at} is not a folder`);
    }
    try {
      accessSync(at, constants.W_OK | constants.X_OK);
    } catch {
      throw new UsageError(`${field} ${dir} cannot be ${at === dir ? 'written' : 'made'}: no write permission in ${at}; give a folder you can write`);
    }
    return dir;
  }
}
