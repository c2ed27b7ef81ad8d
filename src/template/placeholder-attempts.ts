import { UsageError } from '../errors.js';
import { placeholderAt } from './placeholder.js';

/**
 * Braces that were meant as a placeholder but are none (SPEC §10): `{nmae}`, GNU parallel's
 * `{= perl =}`, `{##}` or `{+/}`. Without this they would run as written, exit 0. A brace
 * text is read as a placeholder when what stands between `{` and `}` is a name (letters,
 * digits and `_`, starting with a letter or `_`, maybe followed by `.FIELD`s) or GNU
 * parallel's punctuation (an optional sign and digits, then only `. / # % + : ^ -`), and
 * the `{` does not follow `$` `@` `%` or `#` (`${HOME}`, `@{u}`, `%{http_code}`, `#{x}`),
 * and it is not doubled (`{{x}}`, Go and Jinja templates); `{= … =}` always is one. So
 * `awk '{print $1}'`, `awk '{n++}'`, `{a,b}`, `{1..5}`, `{ next }` and
 * `find … -exec … {} \;` keep working.
 */
const WORD = /\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+)*|[+-]?[0-9]*[./#%+:^-]*)\}/y;
const PERL = /\{=[\s\S]*?=\}/y;
/** What the `{` may follow and still be text of another language (`${x}`, `@{u}`, `%{http_code}`, `#{x}`). */
const NOT_AFTER = new Set(['$', '@', '%', '#']);

const KNOWN = ['{}', '{key}', '{rel}', '{name}', '{stem}', '{ext}', '{dir}', '{start}', '{end}', '{attempt}', '{batch}', '{stage}', '{out}', '{item}', '{.}', '{/}', '{//}', '{/.}', '{#}', '{%}'];

/** The first brace text of `template` meant as a placeholder that is none, or null. */
export function unknownPlaceholder(template: string): string | null {
  for (let at = template.indexOf('{'); at >= 0; at = template.indexOf('{', at + 1)) {
    const known = placeholderAt(template, at);
    if (known) {
      at += known.text.length - 1;
      continue;
    }
    PERL.lastIndex = at;
    const perl = PERL.exec(template);
    if (perl) return perl[0];
    WORD.lastIndex = at;
    const m = WORD.exec(template);
    if (!m || m[1] === '' || NOT_AFTER.has(template[at - 1]!)) continue;
    if (template[at - 1] === '{' && template[at + m[0].length] === '}') continue;
    return m[0];
  }
  return null;
}

/** Refuses a template holding a brace text meant as a placeholder that is none; `what` names where it came from (`--exec`, `--output`…). */
export function checkPlaceholders(template: string, what: string): void {
  const text = unknownPlaceholder(template);
  if (text === null) return;
  const where = `${what} ${JSON.stringify(template.length > 120 ? `${template.slice(0, 120)}…` : template)}`;
  throw new UsageError(`${where}: ${text.length > 60 ? `${text.slice(0, 60)}…` : text} ${whyNot(text)}`);
}

/** What the brace text is not, and what to write instead. */
function whyNot(text: string): string {
  if (text.startsWith('{=')) {
    return "is GNU parallel's Perl expression, which splitdance does not run: compute the value in the shell, e.g. --exec 'f={}; gzip -c \"$f\" > \"${f%.log}.gz\"', or write a handler module (--handler)";
  }
  if (text === '{##}') {
    return "is GNU parallel's number of jobs, which a batch does not have (it grows with its source): count before the run and pass it in the environment, N=$(wc -l < list.txt) splitdance run … --exec '… \"$N\" …'";
  }
  const near = nearest(text);
  const mean = near ? ` (did you mean ${near}?)` : '';
  // Punctuation only: GNU parallel's spellings ({+/}, {0#}, {-1}); a name may be code of another language.
  if (!/[A-Za-z]/.test(text)) return `is not one of splitdance's placeholders${mean}; they are listed in splitdance run --help`;
  return `is not a placeholder${mean}; if it is code of another language (awk, sed, jq…), put a space inside: { ${text.slice(1, -1)} } (placeholders: splitdance run --help)`;
}

/** The known placeholder nearest to `text` (`{nmae}` → `{name}`, `{1./}` → `{1/.}`), if one is near. */
function nearest(text: string): string | null {
  const field = /^\{([1-9][0-9]{0,3})(.*)\}$/.exec(text);
  const candidates = field ? ['', '.', '/', '//', '/.'].map((f) => `{${field[1]}${f}}`) : KNOWN;
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const k of candidates) {
    const d = distance(text, k);
    if (d < bestDistance) [best, bestDistance] = [k, d];
  }
  return bestDistance <= Math.max(2, Math.floor((text.length - 2) / 3)) ? best : null;
}

/** Edit distance counting a swap of two neighbours as one edit (`{nmae}` is one from `{name}`). */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}
