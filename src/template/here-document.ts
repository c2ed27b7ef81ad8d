/**
 * Here-documents in an `--exec` template, found only so the lexer can step over them: no
 * placeholder may stand in one (template-quoting.ts refuses it), and quotes inside the body
 * are text, not quotes.
 */

/** A here-document announced by `<<WORD` (or `<<-WORD`, which strips leading tabs). */
export interface HereDoc {
  delim: string;
  strip: boolean;
}

/** Characters that end the delimiter word. */
const WORD_END = new Set([' ', '\t', '\n', ';', '&', '|', '(', ')', '<', '>']);

/**
 * Reads `<<WORD` / `<<-WORD` at `i`: the here-document and where its operator and word end;
 * `unclosed` is where a quote in the word opens without closing.
 */
export function readHereDocStart(t: string, i: number): { doc: HereDoc; end: number } | { unclosed: number } {
  let at = i + 2;
  const strip = t[at] === '-';
  if (strip) at++;
  while (t[at] === ' ' || t[at] === '\t') at++;
  let delim = '';
  while (at < t.length && !WORD_END.has(t[at]!)) {
    const c = t[at]!;
    if (c === '\\') {
      delim += t[at + 1] ?? '';
      at += 2;
    } else if (c === "'" || c === '"') {
      const close = t.indexOf(c, at + 1);
      if (close < 0) return { unclosed: at };
      delim += t.slice(at + 1, close);
      at = close + 1;
    } else {
      delim += c;
      at++;
    }
  }
  return { doc: { delim, strip }, end: Math.min(at, t.length) };
}

/** Where the body starting at `i` (just after a newline) ends: after its delimiter line, or at the end of the template. */
export function hereDocEnd(t: string, i: number, { delim, strip }: HereDoc): number {
  let at = i;
  while (at < t.length) {
    const nl = t.indexOf('\n', at);
    const line = t.slice(at, nl < 0 ? t.length : nl);
    at = nl < 0 ? t.length : nl + 1;
    if ((strip ? line.replace(/^\t+/, '') : line) === delim) break;
  }
  return at;
}
