/**
 * Items given on the command line as GNU parallel's input sources: `::: a b c` (values),
 * `:::: FILE` (a file's items), several groups as their product (the last varying fastest),
 * `:::+` / `::::+` linked to the group before, value by value (SPEC §3).
 */
import { isUtf8 } from 'node:buffer';
import { UsageError } from '../errors.js';
import type { TaskSpec } from '../store/task-store.js';
import { itemKey } from './item-key.js';
import { delimiterBytes, type ItemsMode } from './items.js';
import { listLines, MAX_ITEM_BYTES } from './list-lines.js';

/** The source recorded for a batch whose items come from `:::` / `::::` groups. */
export const ARGS_SOURCE = ':::';

/** One input source: values given on the command line, or a file of items (stdin copied to one). */
export interface ArgGroup {
  /** `:::+` / `::::+`: paired with the group before, value by value, rather than multiplied. */
  linked: boolean;
  values?: string[];
  /** The file to read (`:::: FILE`), and how messages name it (`-` for stdin). */
  file?: { path: string; shown: string };
}

interface Value {
  text: string;
  /** The exact bytes of a value read from a file that is not valid UTF-8; else null. */
  raw: Buffer | null;
}

/** How a group is named in a message: `::: group 2` or `:::: list.txt`. */
function groupName(group: ArgGroup, index: number): string {
  return group.file ? `${group.linked ? '::::+' : '::::'} ${group.file.shown === '-' ? '- (stdin)' : group.file.shown}` : `the ${group.linked ? ':::+' : ':::'} group ${index + 1}`;
}

function* valuesOf(group: ArgGroup, mode: ItemsMode): Generator<Value> {
  if (group.values) {
    for (const text of group.values) yield { text, raw: null };
    return;
  }
  // As a list's: empty items are skipped, a CR before the LF is no part of a line.
  for (const { bytes } of listLines(group.file!.path, group.file!.shown, delimiterBytes(mode))) {
    if (bytes.length === 0) continue;
    yield { text: bytes.toString('utf8'), raw: isUtf8(bytes) ? null : bytes };
  }
}

/** Groups joined by `:::+` into sets whose values pair up; the sets multiply. */
function linkedSets(groups: ArgGroup[]): ArgGroup[][] {
  const sets: ArgGroup[][] = [];
  for (const g of groups) {
    if (g.linked && sets.length) sets[sets.length - 1]!.push(g);
    else sets.push([g]);
  }
  return sets;
}

/**
 * Checks every group before anything is written: none may be empty, and linked groups must
 * have as many values each (GNU parallel drops the values past the shortest without a word;
 * here a value given is never dropped silently). Reads each file once, a block at a time.
 */
export function checkArgGroups(groups: ArgGroup[], mode: ItemsMode): void {
  const counts = groups.map((g) => {
    let n = 0;
    for (const _ of valuesOf(g, mode)) n++;
    return n;
  });
  groups.forEach((g, i) => {
    if (counts[i] === 0) {
      throw new UsageError(`${groupName(g, i)} holds no values${g.file ? ' (empty lines are skipped)' : ''}; give it at least one, or leave it out`);
    }
  });
  let first = 0;
  groups.forEach((g, i) => {
    if (!g.linked || i === 0) {
      first = i;
      return;
    }
    if (counts[i] !== counts[first]) {
      throw new UsageError(
        `${groupName(g, i)} is linked to ${groupName(groups[first]!, first)} value by value, but has ${counts[i]} values and that one ${counts[first]}; ` +
          'give linked groups as many values each (or use ::: to run every combination)',
      );
    }
  });
}

/** The tuples of one set of linked groups, in order. */
function* tuplesOf(set: ArgGroup[], mode: ItemsMode): Generator<Value[]> {
  const its = set.map((g) => valuesOf(g, mode));
  for (;;) {
    const next = its.map((it) => it.next());
    if (next.every((r) => r.done)) return;
    if (next.some((r) => r.done)) throw new UsageError('linked groups (:::+) have different numbers of values; give them as many each');
    yield next.map((r) => r.value as Value);
  }
}

/** The product of the sets, the last varying fastest (as GNU parallel); files are read again for each outer value. */
function* product(sets: ArgGroup[][], mode: ItemsMode, at = 0): Generator<Value[]> {
  if (at === sets.length) {
    yield [];
    return;
  }
  for (const tuple of tuplesOf(sets[at]!, mode)) for (const rest of product(sets, mode, at + 1)) yield [...tuple, ...rest];
}

/**
 * One task per combination. `{1}`, `{2}`… are its values exactly (`args`), `{}` all of them
 * joined by a space. The key is the value itself for a single group (a plain value: not empty,
 * not starting with `[`), else the JSON array of the values, so `::: 'a b' ::: c` and
 * `::: a ::: 'b c'` are two keys and every value comes back exactly.
 */
export function* readArgGroups(groups: ArgGroup[], mode: ItemsMode): Generator<TaskSpec> {
  for (const values of product(linkedSets(groups), mode)) {
    const texts = values.map((v) => v.text);
    const exact = values.every((v) => v.raw === null);
    const item = texts.join(' ');
    const bytes = exact ? null : Buffer.concat(values.flatMap((v, i) => [...(i ? [Buffer.from(' ')] : []), v.raw ?? Buffer.from(v.text, 'utf8')]));
    if ((bytes?.length ?? Buffer.byteLength(item)) > MAX_ITEM_BYTES) {
      throw new UsageError(`the values ${JSON.stringify(item.slice(0, 60))}… together are longer than 16 MiB, the limit of one item; put big data in files and give their paths`);
    }
    yield {
      key: argsKey(values),
      payload: {
        version: 1,
        path: ARGS_SOURCE,
        rel: ARGS_SOURCE,
        item,
        args: texts,
        ...(bytes ? { bytes: bytes.toString('base64') } : {}),
        ...(mode.colsep === null ? {} : { colsep: mode.colsep }),
      },
      fingerprint: null,
    };
  }
}

/** The key of a combination: see readArgGroups. A value that is not UTF-8 keys by the hash of its exact bytes. */
function argsKey(values: Value[]): string {
  const only = values.length === 1 ? values[0]! : null;
  if (only && only.text !== '' && !only.text.startsWith('[')) return itemKey(only.text, only.raw);
  const exact = values.every((v) => v.raw === null);
  // Each value's length, then its bytes: two different combinations never hash alike.
  const raw = exact ? null : Buffer.concat(values.flatMap((v) => {
    const b = v.raw ?? Buffer.from(v.text, 'utf8');
    return [Buffer.from(`${b.length}:`), b];
  }));
  return itemKey(JSON.stringify(values.map((v) => v.text)), raw);
}
