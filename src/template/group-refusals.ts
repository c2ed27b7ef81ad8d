/**
 * Where an item placeholder may stand when one command runs many items (`-n`, `-N`, `-X`,
 * `-m`), and the usage error where it may not. In a template that runs through the shell an
 * item's hole becomes `'a' 'b' 'c'`; that is exact only where the hole is a word of its own.
 * Inside a word (`x={}`, `pre{}post`, `"a {}"`) it is not: `x='a' 'b' cmd` would run `b`.
 */
import type { QuotedLine } from './quoted-line.js';
import { wrapError } from '../printable.js';

/** What may end the word before a hole: sh's blanks and the operators after which a new word starts. */
const OPENS_WORD = new Set([' ', '\t', '\n', ';', '&', '|', '(', '<', '>']);
/** What may follow a hole and end its word. `)` only here: after `$(…)` a word goes on (`$(cmd){}`). */
const CLOSES_WORD = new Set([' ', '\t', '\n', ';', '&', '|', ')', '<', '>']);

/**
 * Whether hole `h` of `line` stands as a whole word. The lexer (template-quoting.ts) puts every
 * hole at command level, its quotes closed around it, so the line's own characters beside
 * it decide: the line's start or end, or a blank or operator that no backslash escapes
 * (`a\ {}` joins the word). Another hole right beside it is part of the same word.
 */
export function holeIsWord(line: QuotedLine, h: number): boolean {
  const before = line.pieces[h]!;
  const after = line.pieces[h + 1]!;
  const opens = before === '' ? h === 0 : OPENS_WORD.has(before.at(-1)!) && !escaped(before, before.length - 1);
  const closes = after === '' ? h === line.holes.length - 1 : CLOSES_WORD.has(after[0]!);
  return opens && closes;
}

/** Whether the character at `at` follows an odd run of backslashes. */
function escaped(text: string, at: number): boolean {
  let n = 0;
  while (at - 1 - n >= 0 && text[at - 1 - n] === '\\') n++;
  return n % 2 === 1;
}

/** The message for an item placeholder `ph` standing inside a word of a shell template, at `at` in it; `flag` is the group's (`-X`). */
export function insideWordMessage(what: string, flag: string, template: string, ph: string, at: number): string {
  const one = flag === '-N' ? ` or name the items one by one ({1} {2} …, each a value of its own),` : '';
  return wrapError(
    `${what} with ${flag}: ${ph} stands inside a word (${wordAround(template, at, ph.length)}) in a template that runs through the shell, ` +
      `where it cannot be repeated for each item exactly; write ${ph} as a word of its own (between spaces, or "${ph}"),${one} ` +
      `or make the command a simple one, which runs without a shell and where ${ph} may stand inside a word ` +
      `(no $, \`, |, ;, >, & or *), or run one item per command (leave ${flag} out)`,
  );
}

/** The message for `{out}` in a group's template. */
export function outMessage(what: string, flag: string): string {
  return wrapError(`${what} with ${flag}: {out} is the declared output of one item, and declared outputs need one item per command: leave ${flag} out, or drop --output`);
}

/**
 * The word of `template` that the placeholder at `at` stands in, as written, for the message:
 * from the last blank or operator outside quotes before it to the next one after it, at most
 * 40 characters. Only a hint: it follows quotes and backslashes, not `$(…)`'s nesting.
 */
function wordAround(t: string, at: number, length: number): string {
  let start = 0;
  let quote: string | null = null;
  const step = (i: number): number => {
    const c = t[i]!;
    if (quote === "'") quote = c === "'" ? null : quote;
    else if (c === '\\') return i + 2;
    else if (quote === '"') quote = c === '"' ? null : quote;
    else if (c === "'" || c === '"') quote = c;
    return i + 1;
  };
  for (let i = 0; i < at; ) {
    if (quote === null && OPENS_WORD.has(t[i]!) && !(t[i] === '(' && t[i - 1] === '$')) start = i + 1;
    i = step(i);
  }
  let end = at + length;
  while (end < t.length && !(quote === null && (CLOSES_WORD.has(t[end]!) || t[end] === '('))) end = step(end);
  const word = t.slice(start, Math.min(end, t.length)).replace(/\n/g, ' ');
  if (word.length <= 40) return word;
  const from = Math.max(0, Math.min(at - start - 18, word.length - 40));
  return `${from > 0 ? '…' : ''}${word.slice(from, from + 40)}${from + 40 < word.length ? '…' : ''}`;
}
