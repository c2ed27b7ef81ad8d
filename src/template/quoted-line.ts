import type { Placeholder } from './placeholder.js';

/**
 * A template as a shell line with holes: `pieces[0] 'value of holes[0]' pieces[1] …`. Where a
 * placeholder stands decides only the text around its hole, never how its value is quoted
 * (template-quoting.ts), so a template is lexed once and a task's line is plain concatenation.
 */
export interface QuotedLine {
  pieces: string[];
  holes: Placeholder[];
  /** Where in the template each hole's placeholder starts (for messages that name the word it stands in). */
  from: number[];
}

/** Single-quotes a value for /bin/sh: nothing inside is expanded, newlines included. */
export function shellQuote(value: string): string {
  // The test first: most values hold no quote, and a group quotes every item's (a hot path).
  return value.includes("'") ? `'${value.replace(/'/g, `'\\''`)}'` : `'${value}'`;
}

/** The line for one task: `values[k]` is the value of `line.holes[k]`. */
export function joinQuoted(line: QuotedLine, values: string[]): string {
  let out = line.pieces[0]!;
  for (let k = 0; k < values.length; k++) out += shellQuote(values[k]!) + line.pieces[k + 1]!;
  return out;
}
