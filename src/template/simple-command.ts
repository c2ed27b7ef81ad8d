import { placeholderAt, type Placeholder } from './placeholder.js';

/**
 * Recognises a template that is a simple command, as GNU make does for its recipes: plain
 * words, single-quoted strings, double-quoted strings without `$` or backquotes, backslash
 * escapes and placeholders, and a first word that is plain text naming neither a shell
 * builtin nor a reserved word nor an assignment. Its words are what `/bin/sh -c` would pass
 * for the line template-quoting.ts makes of it, each placeholder's value exactly, so the
 * command can be executed without a shell. Anything else — `$`, globs, redirections, pipes,
 * `;`, a newline outside quotes, a placeholder in the first word (its value could name a
 * builtin) — returns null and runs under `/bin/sh -c`.
 */

/** A word: literal text and placeholders, in order. */
export type WordPart = string | Placeholder;

/** Characters sh takes literally anywhere in a word. */
const LITERAL = /^[A-Za-z0-9_./,:@%+=-]$/;

/** Words sh (dash or bash) would run itself, or that open a compound command. */
const SHELL_WORDS = new Set([
  '.', ':', '[', '[[', ']]', '!', '{', '}', 'alias', 'bg', 'break', 'builtin', 'caller', 'case', 'cd', 'chdir',
  'command', 'compgen', 'complete', 'compopt', 'continue', 'coproc', 'declare', 'dirs', 'disown', 'do', 'done',
  'echo', 'elif', 'else', 'enable', 'esac', 'eval', 'exec', 'exit', 'export', 'false', 'fc', 'fg', 'fi', 'for',
  'function', 'getopts', 'hash', 'help', 'history', 'if', 'in', 'jobs', 'kill', 'let', 'local', 'logout',
  'mapfile', 'popd', 'printf', 'pushd', 'pwd', 'read', 'readarray', 'readonly', 'return', 'select', 'set',
  'shift', 'shopt', 'source', 'suspend', 'test', 'then', 'time', 'times', 'trap', 'true', 'type', 'typeset',
  'ulimit', 'umask', 'unalias', 'unset', 'until', 'wait', 'while',
]);

/** After `\` inside double quotes only these lose the backslash (POSIX 2.2.3); `\<newline>` is left to the shell. */
const DQ_ESCAPED = new Set(['$', '`', '"', '\\']);

/** The words of a template that needs no shell, or null. Placeholders are found where template-quoting.ts finds them. */
export function simpleCommandWords(t: string): WordPart[][] | null {
  const words: WordPart[][] = [];
  let word: Word | null = null;
  for (let i = 0; i < t.length; ) {
    const ph = placeholderAt(t, i);
    const c = t[i]!;
    if (ph) {
      (word ??= new Word()).add(ph);
      i += ph.text.length;
    } else if (c === ' ' || c === '\t') {
      if (word) words.push(word.parts);
      word = null;
      i++;
    } else if (c === "'" || c === '"') {
      word ??= new Word(); // `''` is a word of its own
      const end = c === "'" ? singleQuoted(t, i + 1, word) : doubleQuoted(t, i + 1, word);
      if (end < 0) return null;
      i = end + 1;
    } else if (c === '\\') {
      const next = t[i + 1];
      if (next === undefined || next === '\n') return null;
      (word ??= new Word()).add(next);
      i += 2;
    } else if (LITERAL.test(c)) {
      (word ??= new Word()).add(c);
      i++;
    } else {
      return null;
    }
  }
  if (word) words.push(word.parts);
  const first = words[0];
  if (first === undefined || first.length !== 1 || typeof first[0] !== 'string') return null;
  const name = first[0];
  if (name === '' || name.includes('=') || SHELL_WORDS.has(name)) return null;
  return words;
}

/** A word being read: adjacent text merged into one part. */
class Word {
  readonly parts: WordPart[] = [''];

  add(part: WordPart): void {
    const last = this.parts.length - 1;
    if (typeof part === 'string' && typeof this.parts[last] === 'string') this.parts[last] += part;
    else if (this.parts[last] === '') this.parts[last] = part;
    else this.parts.push(part);
  }
}

/** `'…'` from `i` (after the quote): everything literal but placeholders. Returns the closing quote's index, or -1. */
function singleQuoted(t: string, i: number, word: Word): number {
  while (i < t.length) {
    const ph = placeholderAt(t, i);
    if (ph) {
      word.add(ph);
      i += ph.text.length;
    } else if (t[i] === "'") {
      return i;
    } else {
      word.add(t[i++]!);
    }
  }
  return -1;
}

/** `"…"` from `i` (after the quote), when nothing in it expands. Returns the closing quote's index, or -1 (unclosed, or it takes a shell). */
function doubleQuoted(t: string, i: number, word: Word): number {
  while (i < t.length) {
    const ph = placeholderAt(t, i);
    const c = t[i]!;
    if (ph) {
      word.add(ph);
      i += ph.text.length;
    } else if (c === '"') {
      return i;
    } else if (c === '$' || c === '`') {
      return -1;
    } else if (c === '\\') {
      // The escaped character is taken with the backslash: `"\{}"` holds no placeholder.
      const next = t[i + 1];
      if (next === undefined || next === '\n') return -1;
      word.add(DQ_ESCAPED.has(next) ? next : `\\${next}`);
      i += 2;
    } else {
      word.add(c);
      i++;
    }
  }
  return -1;
}
