/**
 * `--key GLOB` matched against every key of a batch, inside the store's write transaction for
 * `cancel` and `retry-failed`. A glob compiled to a backtracking regular expression
 * (`*a*a*a*a*a*b` against a long key) took minutes there, holding the write lock. So a glob is
 * compiled to a small automaton and run as a set of states (Thompson's construction): every
 * match takes at most (key length × pattern length) steps, whatever either holds.
 *
 * The language (docs/inspecting.md): `*` any run of characters but `/`; `**` as a whole path
 * segment, any number of segments; `?` one character but `/`; `[abc]`, `[a-z]`, `[!a]`/`[^a]` one
 * character of (or not of) a set; `{a,b}` either text (nested allowed); `\` makes the next
 * character literal. A leading `!` is a character, never negation.
 */

type Test = (c: string) => boolean;
/** A state: consume one character passing `test` and go to `next`, or go on to `outs` freely. */
type State = { test: Test; next: number } | { outs: number[] } | { match: true };

const ANY: Test = () => true;
const NOT_SLASH: Test = (c) => c !== '/';

/** A part of the automaton under construction: its entry state and the states to link to what follows. */
interface Fragment {
  start: number;
  /** Ends to patch: [state, 'next' | index in outs]. */
  ends: [number, number][];
}

export class KeyGlob {
  private readonly states: State[] = [];
  private readonly start: number;

  constructor(readonly pattern: string) {
    const chars = Array.from(pattern);
    const parser = new Parser(chars, this.states);
    const body = parser.sequence(false);
    const final = this.states.push({ match: true }) - 1;
    patch(this.states, body, final);
    this.start = body.start;
  }

  matches(key: string): boolean {
    let current = this.closure([this.start]);
    for (const c of key) {
      const next: number[] = [];
      for (const s of current) {
        const state = this.states[s]!;
        if ('test' in state && state.test(c)) next.push(state.next);
      }
      if (next.length === 0) return false;
      current = this.closure(next);
    }
    return current.some((s) => 'match' in this.states[s]!);
  }

  /** The states reachable from these without consuming a character, each once. */
  private closure(from: number[]): number[] {
    const seen = new Set<number>();
    const stack = [...from];
    while (stack.length) {
      const s = stack.pop()!;
      if (seen.has(s)) continue;
      seen.add(s);
      const state = this.states[s]!;
      if ('outs' in state) stack.push(...state.outs);
    }
    return [...seen];
  }
}

function patch(states: State[], f: Fragment, to: number): void {
  for (const [s, slot] of f.ends) {
    const state = states[s]!;
    if ('test' in state) state.next = to;
    else if ('outs' in state) state.outs[slot] = to;
  }
}

class Parser {
  private i = 0;
  /** Positions of a `{` that turned out to be a character. */
  private readonly notBraces = new Set<number>();
  constructor(
    private readonly chars: string[],
    private readonly states: State[],
  ) {}

  /** A run of items up to the end, or (inside braces) to the `,` or `}` that ends an alternative. */
  sequence(inBraces: boolean): Fragment {
    const parts: Fragment[] = [];
    while (this.i < this.chars.length) {
      const c = this.chars[this.i]!;
      if (inBraces && (c === ',' || c === '}')) break;
      parts.push(this.item());
    }
    return this.concat(parts);
  }

  private item(): Fragment {
    const c = this.chars[this.i]!;
    if (c === '\\' && this.i + 1 < this.chars.length) {
      const literal = this.chars[this.i + 1];
      this.i += 2;
      return this.one((x) => x === literal);
    }
    if (c === '/' && this.chars.length - this.i === 3 && this.chars[this.i + 1] === '*' && this.chars[this.i + 2] === '*') {
      // `…/**` at the end: the folder itself, or anything below it.
      this.i += 3;
      return this.optional(this.concat([this.one((x) => x === '/'), this.loop(ANY)]));
    }
    if (c === '*') return this.star();
    if (c === '?') {
      this.i++;
      return this.one(NOT_SLASH);
    }
    if (c === '[') {
      const set = this.bracket();
      if (set) return set;
    }
    if (c === '{') {
      const alternatives = this.braces();
      if (alternatives) return alternatives;
    }
    this.i++;
    return this.one((x) => x === c);
  }

  /** `*`, or `**` standing as a whole segment: alone, first and followed by a slash, or between slashes. */
  private star(): Fragment {
    const at = this.i;
    let n = 0;
    for (; this.chars[this.i] === '*'; n++) this.i++;
    const before = at === 0 ? '/' : this.chars[at - 1];
    const after = this.i === this.chars.length ? '/' : this.chars[this.i];
    if (n < 2 || before !== '/' || after !== '/') return this.loop(NOT_SLASH);
    if (this.i === this.chars.length) return this.loop(ANY); // `**` alone: everything
    // `**` then `/`: any number of whole segments, each with its `/` (none at all included).
    this.i++;
    return this.optional(this.concat([this.loop(ANY), this.one((x) => x === '/')]));
  }

  /** `[…]`; null when there is no closing `]` (then `[` is a character). */
  private bracket(): Fragment | null {
    let j = this.i + 1;
    const negate = this.chars[j] === '!' || this.chars[j] === '^';
    if (negate) j++;
    const ranges: [string, string][] = [];
    let first = true;
    while (j < this.chars.length && (this.chars[j] !== ']' || first)) {
      let lo = this.chars[j]!;
      if (lo === '\\' && j + 1 < this.chars.length) lo = this.chars[++j]!;
      let hi = lo;
      if (this.chars[j + 1] === '-' && j + 2 < this.chars.length && this.chars[j + 2] !== ']') {
        hi = this.chars[j + 2]!;
        if (hi === '\\' && j + 3 < this.chars.length) hi = this.chars[++j + 2]!;
        j += 2;
      }
      ranges.push([lo, hi]);
      j++;
      first = false;
    }
    if (j >= this.chars.length) return null;
    this.i = j + 1;
    const bounds = ranges.map(([lo, hi]) => [lo.codePointAt(0)!, hi.codePointAt(0)!] as const);
    const inSet = (x: string) => {
      const c = x.codePointAt(0)!;
      return bounds.some(([lo, hi]) => c >= lo && c <= hi);
    };
    return this.one(negate ? (x) => x !== '/' && !inSet(x) : inSet);
  }

  /**
   * `{a,b,…}`; null when it has no top-level `,` or no closing `}` (then `{` is a character).
   * Whether the braces at a position close does not depend on what surrounds them, so a
   * position that failed once is not parsed again: `{{{{…` stays quadratic, not exponential.
   */
  private braces(): Fragment | null {
    const at = this.i;
    if (this.notBraces.has(at)) return null;
    const mark = this.states.length;
    this.i++;
    const alternatives: Fragment[] = [this.sequence(true)];
    while (this.chars[this.i] === ',') {
      this.i++;
      alternatives.push(this.sequence(true));
    }
    if (this.chars[this.i] !== '}' || alternatives.length < 2) {
      this.notBraces.add(at);
      this.i = at;
      this.states.length = mark; // what was built for it is dropped
      return null;
    }
    this.i++;
    const split = this.states.push({ outs: alternatives.map((a) => a.start) }) - 1;
    return { start: split, ends: alternatives.flatMap((a) => a.ends) };
  }

  private one(test: Test): Fragment {
    const s = this.states.push({ test, next: -1 }) - 1;
    return { start: s, ends: [[s, 0]] };
  }

  /** Any number of characters passing `test`. */
  private loop(test: Test): Fragment {
    const split = this.states.push({ outs: [-1, -1] }) - 1;
    const step = this.states.push({ test, next: split }) - 1;
    (this.states[split] as { outs: number[] }).outs[0] = step;
    return { start: split, ends: [[split, 1]] };
  }

  private optional(f: Fragment): Fragment {
    const split = this.states.push({ outs: [f.start, -1] }) - 1;
    return { start: split, ends: [...f.ends, [split, 1]] };
  }

  private concat(parts: Fragment[]): Fragment {
    if (parts.length === 0) {
      const empty = this.states.push({ outs: [-1] }) - 1;
      return { start: empty, ends: [[empty, 0]] };
    }
    for (let k = 0; k + 1 < parts.length; k++) patch(this.states, parts[k]!, parts[k + 1]!.start);
    return { start: parts[0]!.start, ends: parts[parts.length - 1]!.ends };
  }
}
