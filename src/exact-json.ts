/** JSON read exactly: a number keeps the text it was written as wherever a JS number would change it. */

/**
 * A number whose JS value does not write back as it was written: an integer beyond 2^53
 * (`12345678901234567891` would read as …900), `1.0`, `1e2`, `-0`, `1e400`. Every other number
 * is a plain `number`, whose `String()` is its source text.
 */
export class JsonNumber {
  constructor(readonly source: string) {}
}

/**
 * How deep a JSON Lines record may nest (objects and arrays). Keying, storing and handing a
 * record to a worker walk it recursively; 5,000 levels overflowed the stack (exit 70). Real
 * records nest a few levels; a deeper one is refused, naming its line.
 */
export const MAX_RECORD_DEPTH = 100;

export type ExactJson = null | boolean | number | string | JsonNumber | ExactJson[] | { [field: string]: ExactJson };

/** The text is not JSON; `message` is JSON.parse's own wording where it has one. */
export class JsonSyntaxError extends Error {}

/** The text nests objects and arrays deeper than allowed. */
export class JsonDepthError extends Error {}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const SPACE = /[ \t\n\r]*/y;

/** An open object or array while parsing: where the next value goes. */
type Frame = { kind: 'array'; value: ExactJson[] } | { kind: 'object'; value: { [field: string]: ExactJson }; field: string | null };

/**
 * Parses `text` as JSON.parse does (a repeated field keeps its last value, `__proto__` is a
 * field like any other), except that numbers are kept exactly (JsonNumber). Linear in the
 * text and without recursion; nesting deeper than `maxDepth` is refused before it is built.
 */
export function parseExact(text: string, maxDepth: number): ExactJson {
  try {
    return parse(text, maxDepth);
  } catch (err) {
    if (!(err instanceof SyntaxError)) throw err;
    // The same wording as JSON.parse where it has one (it throws on what this reader refused).
    try {
      JSON.parse(text);
    } catch (native) {
      throw new JsonSyntaxError((native as Error).message);
    }
    throw new JsonSyntaxError(err.message);
  }
}

function parse(text: string, maxDepth: number): ExactJson {
  const stack: Frame[] = [];
  let i = 0;
  const skipSpace = () => {
    SPACE.lastIndex = i;
    SPACE.test(text);
    i = SPACE.lastIndex;
  };
  const fail = (what: string): never => {
    throw new SyntaxError(`${what} at position ${i}`);
  };
  for (;;) {
    skipSpace();
    let value: ExactJson;
    const c = text[i];
    if (c === '{' || c === '[') {
      if (stack.length >= maxDepth) throw new JsonDepthError(`nests more than ${maxDepth} levels`);
      i++;
      skipSpace();
      const close = c === '{' ? '}' : ']';
      if (text[i] !== close) {
        if (c === '{') {
          stack.push({ kind: 'object', value: {}, field: readField() });
        } else stack.push({ kind: 'array', value: [] });
        continue;
      }
      i++;
      value = c === '{' ? {} : [];
    } else if (c === '"') value = readString();
    else if (c === 't' && text.startsWith('true', i)) {
      value = true;
      i += 4;
    } else if (c === 'f' && text.startsWith('false', i)) {
      value = false;
      i += 5;
    } else if (c === 'n' && text.startsWith('null', i)) {
      value = null;
      i += 4;
    } else {
      NUMBER.lastIndex = i;
      const m = NUMBER.exec(text);
      if (m === null) fail('unexpected character');
      const source = m![0];
      i += source.length;
      const n = Number(source);
      value = String(n) === source ? n : new JsonNumber(source);
    }
    // Put the value in its container, closing every container that ends after it.
    for (;;) {
      const top = stack[stack.length - 1];
      if (top === undefined) {
        skipSpace();
        if (i !== text.length) fail('unexpected text after the JSON');
        return value;
      }
      if (top.kind === 'array') top.value.push(value);
      else setField(top.value, top.field!, value);
      skipSpace();
      if (text[i] === ',') {
        i++;
        if (top.kind === 'object') {
          skipSpace();
          top.field = readField();
        }
        break;
      }
      if (text[i] !== (top.kind === 'array' ? ']' : '}')) fail('expected , or a closing bracket');
      i++;
      stack.pop();
      value = top.value;
    }
  }

  /** A field name and its colon. */
  function readField(): string {
    if (text[i] !== '"') fail('expected a field name');
    const name = readString();
    skipSpace();
    if (text[i] !== ':') fail('expected :');
    i++;
    return name;
  }

  /** The string starting at `i` (its quote), decoded by JSON.parse itself (escapes, control characters). */
  function readString(): string {
    let end = i + 1;
    for (;;) {
      end = text.indexOf('"', end);
      if (end < 0) fail('unterminated string');
      let slashes = 0;
      while (text.charCodeAt(end - 1 - slashes) === 0x5c) slashes++;
      if (slashes % 2 === 0) break;
      end++;
    }
    const token = text.slice(i, end + 1);
    i = end + 1;
    return token.includes('\\') || /[\u0000-\u001f]/.test(token) ? (JSON.parse(token) as string) : token.slice(1, -1); // eslint-disable-line no-control-regex
  }
}

/** A field set as JSON.parse sets it: own, enumerable, also when it is named `__proto__`. */
function setField(object: { [field: string]: ExactJson }, field: string, value: ExactJson): void {
  if (field === '__proto__') Object.defineProperty(object, field, { value, writable: true, enumerable: true, configurable: true });
  else object[field] = value;
}

/** Compact JSON of a value, every number as it was written, fields in their order (`sorted`: by name, at every level). */
export function exactText(value: ExactJson, sorted = false): string {
  if (value instanceof JsonNumber) return value.source;
  if (Array.isArray(value)) return `[${value.map((v) => exactText(v, sorted)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const fields = sorted ? Object.keys(value).sort() : Object.keys(value);
    return `{${fields.map((f) => `${JSON.stringify(f)}:${exactText(value[f]!, sorted)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * The value as plain JSON data, for a handler's `task.record` and the stored payload: a number
 * stays a number, except one a JS number cannot hold (an integer beyond 2^53, one out of
 * range), which is its text, so its digits are exact. `1.0` is 1 and `1e2` is 100, as JSON.parse reads them.
 */
export function plainJson(value: ExactJson): unknown {
  if (value instanceof JsonNumber) {
    const n = Number(value.source);
    const integer = !/[.eE]/.test(value.source);
    return !Number.isFinite(n) || (integer && !Number.isSafeInteger(n)) ? value.source : n;
  }
  if (Array.isArray(value)) return value.map(plainJson);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const f of Object.keys(value)) setField(out as { [field: string]: ExactJson }, f, plainJson(value[f]!) as ExactJson);
    return out;
  }
  return value;
}
