import { describeStore, resolveDbPath } from '../store/open-store.js';
import { hasUnsafe } from './format.js';
import type { Io } from './io.js';

/** What every suggested command names, so it acts on the same store and batch wherever it is pasted. */
export interface Target {
  batch?: string;
  /** The store the user named (`--db` or `SPLITDANCE_DB`), resolved; undefined for the default store. */
  db?: string;
}

/**
 * The store to repeat in suggestions: the one given by `--db` or `SPLITDANCE_DB`, as an
 * absolute path (a cron job's working directory is not the user's), or undefined when the
 * default store was used.
 */
export function givenDb(flag: string | undefined, io: Pick<Io, 'cwd' | 'env'>): string | undefined {
  if (flag === undefined && (io.env.SPLITDANCE_DB ?? '').trim() === '') return undefined;
  return resolveDbPath(flag, io.cwd, io.env);
}

/**
 * A command for the user to run, as one line of POSIX shell: `splitdance WORDS --batch B
 * [--db D] [--] [OPERAND]`, every word quoted as it needs. A key starting with `-` comes
 * after `--` so it is never read as an option. A URL store shows its redacted form (a
 * password is never printed; the user supplies it again).
 */
export function commandLineFor(target: Target, words: string[], operand?: string): string {
  const argv = ['splitdance', ...words];
  if (target.batch !== undefined) argv.push('--batch', target.batch);
  if (target.db !== undefined) argv.push('--db', describeStore(target.db));
  if (operand !== undefined) argv.push(...(operand.startsWith('-') ? ['--', operand] : [operand]));
  return argv.map(shellWord).join(' ');
}

const PLAIN = /^[A-Za-z0-9_/.,:=@%+-]+$/;

/**
 * One word quoted for /bin/sh. Plain words stay bare; others go in single quotes. A word
 * holding control or bidi characters cannot be printed raw (SPEC §9), so it is spelled as
 * `"$(printf '\033…')"` with those bytes as octal escapes: printable, and the same bytes
 * once the shell runs it. (Command substitution drops trailing newlines: a word ending in
 * one loses it — the one case this cannot spell.)
 */
export function shellWord(word: string): string {
  if (PLAIN.test(word)) return word;
  if (!hasUnsafe(word)) return `'${word.replace(/'/g, `'\\''`)}'`;
  let format = '';
  for (const ch of word) {
    if (hasUnsafe(ch)) for (const byte of Buffer.from(ch)) format += `\\${byte.toString(8).padStart(3, '0')}`;
    else if (ch === '\\') format += '\\\\';
    else if (ch === '%') format += '%%';
    else if (ch === "'") format += `'\\''`;
    else format += ch;
  }
  return `"$(printf '${format}')"`;
}
