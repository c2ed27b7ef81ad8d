/**
 * Items given on `run`'s command line, as GNU parallel's input sources: `::: a b`, `:::: FILE`
 * (`-` for stdin), `:::+` / `::::+` linked, `-a FILE` (as `:::: FILE`); and the `-d`
 * delimiter's escapes. Turned here into the groups the splitter reads (split/arg-groups.ts).
 */
import { createReadStream, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { UsageError } from '../errors.js';
import { printable } from '../printable.js';
import type { ArgGroup } from '../split/arg-groups.js';
import type { ItemsMode } from '../split/items.js';

export type GroupMarker = ':::' | '::::' | ':::+' | '::::+';

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

/**
 * The copies of lists that can be read once (stdin, a FIFO from `<(cmd)`): each is copied to a
 * private temporary file when first needed (split/stdin-spool.ts), and all go at `remove`.
 */
export class Spools {
  private readonly copies: { remove(): void }[] = [];

  async copy(path: string, shown: string): Promise<string> {
    const { spoolStdin } = await import('../split/stdin-spool.js');
    const stream = path === '-' ? process.stdin : createReadStream(path);
    const spooled = await spoolStdin(stream, path === '-' ? 'stdin' : printable(shown));
    this.copies.push(spooled);
    return spooled.path;
  }

  remove(): void {
    for (const c of this.copies) c.remove();
  }
}

/** The groups as the splitter reads them: a file that can be read once (stdin, a FIFO) is copied by `spool` first. */
export async function readableGroups(groups: PlannedGroup[], spool: (path: string, shown: string) => Promise<string>): Promise<ArgGroup[]> {
  const out: ArgGroup[] = [];
  for (const g of groups) {
    if (g.values) out.push({ linked: g.linked, values: g.values });
    else out.push({ linked: g.linked, file: { path: g.file === '-' || readOnce(g.file!) ? await spool(g.file!, g.shown!) : g.file!, shown: g.shown! } });
  }
  return out;
}

/** Groups take the place of a source: one given as well is exit 2 naming both. */
export function checkNoOtherSource(flags: { groups?: RawArgGroup[]; items?: string }, sourceArg: string | undefined): void {
  const marker = flags.groups?.[0]?.marker ?? '-a';
  const other = sourceArg !== undefined ? `the source ${sourceArg}` : flags.items !== undefined ? `--items ${flags.items}` : null;
  if (other !== null) throw new UsageError(`give the items either as ${other} or after ${marker}, not both; ${marker} takes the place of a source`);
}

/** An option typed after `:::` is an item there (as in parallel): a message that misses it says where it went. */
export function lateOptions(groups: RawArgGroup[]): string {
  const late = groups.flatMap((g) => g.words).find((w) => /^--(exec|handler|job)(=|$)/.test(w));
  return late ? `; ${late.split('=')[0]} came after :::, where every word is an item: put the options before the first :::` : '';
}


/** Checks a group's file before it is read: it must exist and be a file (or stdin, or a FIFO). */
export function checkGroupFile(g: PlannedGroup): void {
  if (!g.file || g.file === '-' || readOnce(g.file)) return;
  let dir: boolean;
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

/**
 * `:::` values are items already: JSON Lines and a delimiter read files. `-0` / `-d` apply to
 * the files of `::::` (and stdin), as in GNU parallel, and mean nothing without one.
 */
export function checkArgsMode(mode: ItemsMode | null | undefined, files: boolean): void {
  if (mode?.format === 'jsonl') throw new UsageError('--jsonl and --key-field read a JSON Lines list; the values after ::: are items as written: leave them out, or give the list with --items FILE');
  if (mode?.delimiter !== undefined && !files) {
    throw new UsageError(`${mode.delimiter === '\0' ? '-0' : '-d'} splits a file or stdin into items; the values after ::: are items already: leave it out (or give a file with :::: FILE)`);
  }
}
