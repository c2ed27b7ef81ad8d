/**
 * Items given on `run`'s command line, as GNU parallel's input sources: `::: a b`, `:::: FILE`
 * (`-` for stdin), `:::+` / `::::+` linked, `-a FILE` (as `:::: FILE`); and the `-d`
 * delimiter's escapes. Turned here into the groups the splitter reads (split/arg-groups.ts).
 */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { UsageError } from '../errors.js';
import { printable } from '../printable.js';
import type { ArgGroup } from '../split/arg-groups.js';

export const GROUP_MARKERS = [':::', '::::', ':::+', '::::+'] as const;
export type GroupMarker = (typeof GROUP_MARKERS)[number];

/** A group as the command line gives it: its marker and the words up to the next one. */
export interface RawArgGroup {
  marker: GroupMarker;
  words: string[];
}

/** A group before its file is opened: stdin and FIFOs are copied first (they can be read once). */
export interface PlannedGroup {
  linked: boolean;
  values?: string[];
  /** `:::: FILE`: absolute path, or `-` for stdin. */
  file?: string;
  /** The file as the command line wrote it. */
  shown?: string;
}

/**
 * The groups, in order: `-a FILE`s first (as GNU parallel takes them), then those after the
 * first marker. Every file after `::::` is a group of its own (multiplied); after `::::+`
 * each is linked. An empty group is exit 2.
 */
export function plannedGroups(raw: RawArgGroup[], argFiles: string[], cwd: string): PlannedGroup[] {
  const groups: PlannedGroup[] = [];
  const file = (word: string, linked: boolean, flag: string): PlannedGroup => {
    if (word === '') throw new UsageError(`${flag} needs a file of items, or - for stdin`);
    return { linked, file: word === '-' ? '-' : resolve(cwd, word), shown: word };
  };
  for (const f of argFiles) groups.push(file(f, false, '-a/--arg-file'));
  for (const g of raw) {
    const linked = g.marker.endsWith('+');
    if (g.words.length === 0) {
      throw new UsageError(
        `${g.marker} is followed by no ${g.marker.startsWith('::::') ? 'file' : 'values'}; give ${g.marker.startsWith('::::') ? `${g.marker} FILE` : `${g.marker} a b c`}, or leave it out` +
          ' (options go before the first :::)',
      );
    }
    if (g.marker.startsWith('::::')) for (const w of g.words) groups.push(file(w, linked, g.marker));
    else groups.push({ linked, values: g.words });
  }
  if (groups.length && groups[0]!.linked) throw new UsageError(`${raw[0]!.marker} links a group to the one before it, and there is none; start with ::: or ::::`);
  if (groups.filter((g) => g.file === '-').length > 1) throw new UsageError('stdin can be read once: give - to one :::: (or -a) only');
  return groups;
}

/** What makes a command line's groups one batch: their kinds and files, not the values (a value added runs only the new combinations). */
export function groupsShape(groups: PlannedGroup[]): string {
  return groups.map((g) => `${g.linked ? '+' : ''}${g.file ?? ':::'}`).join('\0');
}

/** A file that can be read only once (a FIFO from `<(cmd)`, a terminal, a socket): copied before it is read. */
export function readOnce(path: string): boolean {
  try {
    const st = statSync(path);
    return st.isFIFO() || st.isCharacterDevice() || st.isSocket();
  } catch {
    return false; // reported by the source check that follows
  }
}

/** A group's file as the splitter reads it. */
export function argGroup(g: PlannedGroup, path: string | undefined): ArgGroup {
  return g.values ? { linked: g.linked, values: g.values } : { linked: g.linked, file: { path: path ?? g.file!, shown: g.shown! } };
}

/** Checks a group's file before it is read: it must exist and be a file (or stdin, or a FIFO). */
export function checkGroupFile(g: PlannedGroup): void {
  if (!g.file || g.file === '-' || readOnce(g.file)) return;
  let dir = false;
  try {
    dir = statSync(g.file).isDirectory();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const option = g.shown!.startsWith('-') ? ' (options go before the first ::: or ::::)' : '';
    throw new UsageError(`:::: ${printable(g.shown!)}: ${code === 'ENOENT' ? 'no such file' : `cannot read it (${code})`}; give a file of items, one per line (- for stdin)${option}`);
  }
  if (dir) throw new UsageError(`:::: ${printable(g.shown!)} is a directory; give a file of items, one per line (or run the directory itself: run ${printable(g.shown!)})`);
}

/**
 * `-d DELIM` as GNU parallel reads it: `\n`, `\t`, `\r`, `\0` and octal `\NNN` (up to `\177`)
 * are escapes; `\\` is one backslash (as xargs; parallel would take two); any other text,
 * several characters too, is the delimiter as written.
 */
export function parseDelimiter(text: string): string {
  const out = text.replace(/\\(\\|t|n|r|[0-7]{3}|[0-7])/g, (_, e: string) => {
    if (e === '\\') return '\\';
    if (e === 't') return '\t';
    if (e === 'n') return '\n';
    if (e === 'r') return '\r';
    const code = parseInt(e, 8);
    if (code > 0o177) throw new UsageError(`-d ${JSON.stringify(text)}: \\${e} is not an ASCII character; give the delimiter as text, or an escape up to \\177`);
    return String.fromCharCode(code);
  });
  if (out === '') throw new UsageError("-d is empty; give the text that ends each item, e.g. -d , or -d '\\t' (-0 for NUL)");
  return out;
}
