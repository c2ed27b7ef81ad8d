import { UsageError } from '../errors.js';
import { hereDocEnd, readHereDocStart, type HereDoc } from './here-document.js';
import { PLACEHOLDER, placeholderOf, type Placeholder } from './placeholder.js';
import type { QuotedLine } from './quoted-line.js';
import { CommandWords } from './shell-script-word.js';
import { ambiguous, refuse, unclosed } from './template-refusals.js';

/**
 * Where placeholders may stand in an `--exec` template and how each is quoted there (SPEC §4).
 * A small sh lexer walks the template: at command level (the top, or inside `$(…)`, where
 * quoting starts fresh) a value is inserted as `'value'`; inside `'…'` or `"…"` the string is
 * closed, `'value'` inserted and the string reopened, so the word stays one word and nothing
 * in the value is expanded. Where no quoting can keep a value exact — backquotes (backslashes
 * are reprocessed), `${…}`, `$((…))`, a here-document, the script of `sh -c`, the arguments
 * of `eval` or `trap`, ssh's remote command (a second shell would run them: shell-script-word.ts)
 * — the template is refused (template-refusals.ts says why). Comments are copied untouched: a value with
 * a newline would end the comment and run.
 *
 * The lexer must find every place sh would see a quote, `$(`, or comment; when in doubt it
 * refuses (a usage error) rather than guess. It runs once per template, leaving a hole where
 * each quoted value goes (quoted-line.ts); exec-command.ts fills the holes per task.
 */

/** Characters that end a word for sh, so a `#` after them starts a comment. */
const WORD_END = new Set([undefined, ' ', '\t', '\n', ';', '&', '|', '(', ')', '<', '>']);

/** Compiles `template` for the shell; throws UsageError where no quoting keeps a value exact. */
export function quoteByContext(template: string): QuotedLine {
  return new Lexer(template).render();
}

class Lexer {
  private i = 0;
  private out = '';
  /** Where in `out` each placeholder's quoted value goes. */
  private holes: { at: number; from: number; placeholder: Placeholder }[] = [];
  /** Here-documents announced on the current line: delimiter and whether `<<-` strips tabs. */
  private heredocs: HereDoc[] = [];
  /** Where dash and bash read a template differently, it is refused only if it has placeholders. */
  private readonly anyPlaceholder: string | null;

  constructor(private readonly t: string) {
    this.anyPlaceholder = new RegExp(PLACEHOLDER.source).exec(t)?.[0] ?? null;
  }

  render(): QuotedLine {
    this.command(false, null);
    const pieces: string[] = [];
    let from = 0;
    for (const { at } of this.holes) {
      pieces.push(this.out.slice(from, at));
      from = at;
    }
    pieces.push(this.out.slice(from));
    return { pieces, holes: this.holes.map((h) => h.placeholder), from: this.holes.map((h) => h.from) };
  }

  /** The placeholder starting at `i`, if any. */
  private placeholder(at = this.i): RegExpExecArray | null {
    PLACEHOLDER.lastIndex = at;
    return PLACEHOLDER.exec(this.t);
  }

  /** Holes take no room: `quoted` only ever drops the quote it has just opened, before any hole of its string. */
  private hole(m: RegExpExecArray): void {
    this.holes.push({ at: this.out.length, from: this.i, placeholder: placeholderOf(m) });
  }

  /** Command level: the top (`inSub` false) or inside `$(…)` up to its `)`. `refusing` names why no placeholder may appear. */
  private command(inSub: boolean, refusing: string | null): void {
    const start = this.i - 2;
    let depth = 0;
    let cases = 0;
    const t = this.t;
    const words = new CommandWords();
    const outer = refusing;
    while (this.i < t.length) {
      const c = t[this.i]!;
      const wordStart = WORD_END.has(t[this.i - 1]);
      words.see(t, this.i);
      refusing = outer ?? words.reevaluation(t, this.i);
      const m = this.placeholder();
      if (m) {
        if (refusing) refuse(m[0], refusing);
        this.hole(m);
        this.i += m[0].length;
      } else if (c === '\\') {
        this.copy(2); // escapes the next character: `\{}` stays a literal `{}`
      } else if (c === "'") {
        this.quoted("'", refusing);
      } else if (c === '"') {
        this.quoted('"', refusing);
      } else if (c === '`') {
        this.backquote();
      } else if (c === '$' && (t[this.i + 1] === "'" || t[this.i + 1] === '"')) {
        // bash reads $'…' with escapes of its own (so even where it ends differs) and translates $"…"
        ambiguous(`${t.slice(this.i, this.i + 2)}…`, this.anyPlaceholder);
        this.copy(1);
        this.quoted(t[this.i] as "'" | '"', refusing);
      } else if (c === '$') {
        this.dollar(refusing, false);
      } else if (c === '(' && t[this.i + 1] === '(' && wordStart) {
        this.arith(2); // bash's ((…)) command evaluates like $((…)); dash reads nested subshells
      } else if (c === '#' && wordStart) {
        const end = t.indexOf('\n', this.i);
        this.copy((end < 0 ? t.length : end) - this.i);
      } else if (t.startsWith('<<<', this.i)) {
        this.copy(3); // bash's here-string: an ordinary word follows
      } else if (c === '<' && t[this.i + 1] === '<') {
        this.heredocStart();
      } else if (c === '\n') {
        this.copy(1);
        this.heredocBodies();
      } else if (inSub && c === ')' && depth === 0 && cases === 0) {
        this.i++;
        return;
      } else {
        if (inSub && c === '(') depth++;
        else if (inSub && c === ')' && depth > 0) depth--;
        // A `case` pattern's `)` does not close `$(…)`.
        if (inSub && wordStart && /^case[ \t\n]/.test(t.slice(this.i, this.i + 5))) cases++;
        if (inSub && wordStart && cases > 0 && /^esac(?![A-Za-z0-9_])/.test(t.slice(this.i, this.i + 5))) cases--;
        this.copy(1);
      }
    }
    if (inSub) unclosed(this.t, '$(', start);
  }

  private copy(n: number): void {
    this.out += this.t.slice(this.i, this.i + n);
    this.i += n;
  }

  /**
   * A quoted string: `'…'` (nothing special inside) or `"…"` (`\`, `$`, backquote special).
   * A placeholder closes the string, inserts `'value'` and reopens it; an empty `''`/`""`
   * left beside the value is dropped, so `"{}"` renders as just `'value'`.
   */
  private quoted(q: "'" | '"', refusing: string | null): void {
    const t = this.t;
    const open = this.i;
    this.copy(1);
    let openedAt = this.out.length;
    let reopen = false;
    const flush = () => {
      if (reopen) this.out += q;
      reopen = false;
    };
    while (this.i < t.length) {
      const c = t[this.i]!;
      const m = this.placeholder();
      if (m) {
        if (refusing) refuse(m[0], refusing);
        if (!reopen) this.out = this.out.length === openedAt ? this.out.slice(0, -1) : this.out + q;
        this.hole(m);
        this.i += m[0].length;
        reopen = true;
        openedAt = -1;
      } else if (c === q) {
        if (!reopen) this.out += q;
        this.i++;
        return;
      } else if (q === "'") {
        flush();
        this.copy(1);
      } else {
        flush();
        if (c === '\\') this.copy(2);
        else if (c === '`') this.backquote();
        else if (c === '$') this.dollar(refusing, true);
        else this.copy(1);
      }
    }
    unclosed(this.t, q === "'" ? "quote '" : 'quote "', open);
  }

  /** Backquotes end at the first unescaped backquote; no placeholder may stand inside. */
  private backquote(): void {
    const open = this.i;
    this.copy(1);
    while (this.i < this.t.length) {
      const c = this.t[this.i]!;
      const m = this.placeholder();
      if (m) refuse(m[0], 'backquote');
      if (c === '\\') this.copy(2);
      else {
        this.copy(1);
        if (c === '`') return;
      }
    }
    unclosed(this.t, 'backquote `', open);
  }

  /** `$(…)` (fresh context), `$((…))` and `${…}` (refused), or a plain `$`. */
  private dollar(refusing: string | null, inDouble: boolean): void {
    const t = this.t;
    const open = this.i;
    if (t.startsWith('$((', this.i)) {
      this.arith(3);
    } else if (t.startsWith('$(', this.i)) {
      this.copy(2);
      this.command(true, refusing);
      this.out += ')';
    } else if (t.startsWith('${', this.i)) {
      const m = this.placeholder(this.i + 1);
      if (m) {
        throw new UsageError(
          `--exec template: "$${m[0]}": a $ right before ${m[0]} makes the shell read a variable; drop the $, or write '$'${m[0]} for a literal $`,
        );
      }
      this.copy(2);
      while (this.i < t.length) {
        const c = t[this.i]!;
        const inner = this.placeholder();
        if (inner) refuse(inner[0], 'param');
        if (c === '}') return this.copy(1);
        // In "${x:-'…'}" dash takes ' literally and bash as a quote: they disagree on where it ends.
        if (c === "'" && inDouble) ambiguous(`a ' inside "\${…}"`, this.anyPlaceholder);
        if (c === '\\') this.copy(2);
        else if (c === "'") this.quoted("'", 'param');
        else if (c === '"') this.quoted('"', 'param');
        else if (c === '`') this.backquote();
        else if (c === '$') this.dollar('param', inDouble);
        else this.copy(1);
      }
      unclosed(this.t, '${', open);
    } else {
      if (t[this.i + 1] === '[') ambiguous('$[…] (arithmetic in bash)', this.anyPlaceholder);
      this.copy(1);
    }
  }

  /**
   * `$((…))` or `((…))`, `skip` characters long at the start: the value would be evaluated, so
   * no placeholder; but a `$(…)` inside starts a command of its own, where a value is an
   * argument like anywhere else (`$(( $(wc -c < {}) % 5 ))`): its output is evaluated, not the value.
   */
  private arith(skip: number): void {
    const t = this.t;
    const open = this.i;
    this.copy(skip);
    let depth = 0;
    while (this.i < t.length) {
      const m = this.placeholder();
      if (m) refuse(m[0], 'arith');
      const c = t[this.i]!;
      if (c === '$' && t[this.i + 1] === '(' && t[this.i + 2] !== '(') {
        this.copy(2);
        this.command(true, null);
        this.out += ')';
        continue;
      }
      if (c === ')' && depth === 0 && t[this.i + 1] === ')') return this.copy(2);
      if (c === '(') depth++;
      if (c === ')') depth--;
      this.copy(1);
    }
    unclosed(this.t, t.slice(open, open + skip), open);
  }

  /** No placeholder may start in [from, to). */
  private refuseIn(from: number, to: number, why: string): void {
    for (let at = from; at < to; at++) {
      const m = this.placeholder(at);
      if (m) refuse(m[0], why);
    }
  }

  /** `<<WORD` / `<<-WORD`: the body follows the next newline. */
  private heredocStart(): void {
    const read = readHereDocStart(this.t, this.i);
    if ('unclosed' in read) return unclosed(this.t, `quote ${this.t[read.unclosed]}`, read.unclosed);
    this.refuseIn(this.i, read.end, 'heredoc');
    this.heredocs.push(read.doc);
    this.copy(read.end - this.i);
  }

  /** After a newline: the bodies of the here-documents announced on the line just ended. */
  private heredocBodies(): void {
    for (const doc of this.heredocs.splice(0)) {
      const end = hereDocEnd(this.t, this.i, doc);
      this.refuseIn(this.i, end, 'heredoc');
      this.copy(end - this.i);
    }
  }
}
