/**
 * Text printed for a person carries data (file names, keys, errors, task output), so it is
 * escaped in one place for every layer: the CLI's lines and tables, and the HTML report.
 */

/**
 * What a terminal would act on instead of showing: C0 controls and DEL (ESC starts colour,
 * cursor and title sequences, CR overwrites a line, BEL rings), C1 controls U+0080–U+009F
 * (U+009B is a one-character CSI on many terminals), bidi embeddings, overrides and isolates
 * (U+202A–U+202E, U+2066–U+2069, U+200E/U+200F, U+061C: they reorder the rest of the line
 * so a name ending in `U+202E gol.sh` reads as ending in `hs.log`) and the Unicode line separators U+2028/U+2029.
 * Also the invisible format characters, which make distinct keys print identically: the soft
 * hyphen U+00AD, U+180E, zero-width space and non-joiner U+200B/U+200C, the word joiner and
 * invisible operators U+2060–U+2064, U+206A–U+206F, the BOM U+FEFF, U+FFF9–U+FFFB, the tag
 * characters U+E0000–U+E007F, and a zero-width joiner U+200D except inside an emoji sequence
 * (between two pictographs, as in 👩‍💻).
 */
const UNSAFE =
  /* eslint-disable no-control-regex, no-misleading-character-class -- the characters a terminal acts on, matched on purpose */
  /[\x00-\x1f\x7f-\x9f\xad\u061c\u180e\u200b\u200c\u200e\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\u{e0000}-\u{e007f}]|\u200d(?:(?<!\p{Extended_Pictographic}[\ufe0f\u{1f3fb}-\u{1f3ff}]?\u200d)|(?!\p{Extended_Pictographic}))/gu;
/* eslint-enable no-control-regex, no-misleading-character-class */

/** Whether the text holds a character a terminal would act on (see UNSAFE). */
export const hasUnsafe = (text: string): boolean => new RegExp(UNSAFE.source, 'u').test(text); // eslint-disable-line no-misleading-character-class

/**
 * Data (keys, paths, errors, output, batch names) made safe to print for a person: every
 * character in UNSAFE is shown as an escape (`\x1b`, `\u202e`, `\n`, `\t`). With `lines`,
 * newlines and tabs stay as they are, for output tails shown as lines. JSON output never
 * goes through this: it carries the exact text.
 */
export function printable(text: string | null | undefined, { lines = false }: { lines?: boolean } = {}): string {
  if (text === null || text === undefined) return '';
  return String(text).replace(UNSAFE, (ch) => {
    if (ch === '\n') return lines ? ch : '\\n';
    if (ch === '\t') return lines ? ch : '\\t';
    if (ch === '\r') return '\\r';
    const code = ch.codePointAt(0)!;
    if (code <= 0xff) return `\\x${code.toString(16).padStart(2, '0')}`;
    return code <= 0xffff ? `\\u${code.toString(16).padStart(4, '0')}` : `\\u{${code.toString(16)}}`;
  });
}

/** `1 task`, `2 tasks`, `0 tasks`: a count with its noun, in the plural unless it is one. */
export function plural(n: number, noun: string, nouns = `${noun}s`): string {
  return `${n} ${n === 1 ? noun : nouns}`;
}

/** What an error's first line starts with on stderr (cli/main.ts): its room is shorter. */
const ERROR_PREFIX = 'splitdance: error: ';

/**
 * An error message in lines that reach an 80-column terminal whole, its first after the
 * `splitdance: error: ` prefix, broken at spaces; a line break already in it stays.
 */
export function wrapError(text: string): string {
  const out: string[] = [];
  for (const paragraph of text.split('\n')) {
    let line = '';
    for (const word of paragraph.split(' ')) {
      const room = 80 - (out.length === 0 ? ERROR_PREFIX.length : 0);
      if (line !== '' && line.length + 1 + word.length > room) {
        out.push(line);
        line = word;
      } else line = line === '' ? word : `${line} ${word}`;
    }
    out.push(line);
  }
  return out.join('\n');
}
