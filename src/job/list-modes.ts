import { UsageError } from '../errors.js';
import { formatBytes } from '../stored-text.js';
import { printable } from '../printable.js';
import { DEFAULT_BLOCK, MAX_BLOCK_BYTES } from '../split/stdin-blocks.js';
import { ITEM_PLACEHOLDER } from '../template/placeholder.js';
import type { JobSettings } from './job-definition.js';
import type { RawRunFlags, RunInput } from './run-options.js';

/*
 * How a batch reads a list or a stream, checked before anything is written: the way its keys
 * are made is kept for its life, and `run - --pipe` cuts stdin into blocks where every other
 * list is one task per item.
 */

/**
 * A batch keeps the kind of source it was created from, and a list keeps how its keys are made
 * (plain lines, JSON Lines, `--key-field`): the same lines read another way would be new keys,
 * and run again. `--colsep` may change: each item carries its own.
 */
export function checkItemsMode(stored: JobSettings, settings: JobSettings, batch: string): void {
  const kind = (s: JobSettings) =>
    s.items === null
      ? 'a directory or a file'
      : s.items.format === 'jsonl'
        ? `JSON Lines${s.items.keyField ? ` keyed by --key-field ${s.items.keyField}` : ''}`
        : s.items.format === 'blocks'
          ? 'stdin in blocks (run - --pipe)'
          : s.items.delimiter === undefined
            ? 'a list of lines'
            : s.items.delimiter === '\0'
              ? 'a list of NUL-separated items (-0)'
              : `a list of items separated by ${JSON.stringify(s.items.delimiter)} (-d)`;
  if (kind(stored) !== kind(settings)) {
    throw new UsageError(`batch ${printable(batch)} was created from ${kind(stored)}, not ${kind(settings)}; its task keys are made that way, so use a new --batch for this`);
  }
}

/** Whether a handler is `--exec … --pipe`: with `-` as the source, stdin is cut into blocks. */
export function pipes(handler: JobSettings['handler'] | undefined): boolean {
  return handler?.kind === 'exec' && handler.pipe === true;
}

/**
 * `run - --pipe` (GNU parallel's `--pipe`): stdin in line-aligned blocks of `--block` (1 MiB
 * unless given; at most MAX_BLOCK_BYTES, since a block is stored with its task) or `--lines`
 * lines. `--items -` stays a list (each item on its command's stdin), and so do JSON Lines.
 */
export function blockInput(input: RunInput, flags: RawRunFlags, existing: boolean): void {
  if (input.settings.items) {
    throw new UsageError('`run - --pipe` cuts stdin into blocks of lines; --jsonl, --key-field, --colsep, -0 and -d read it as a list: to give each item on stdin, use --items - --pipe');
  }
  input.settings.items = { format: 'blocks', keyField: null, colsep: null };
  const size = input.settings.chunkSize;
  if (size !== undefined && input.settings.lines === undefined && size > MAX_BLOCK_BYTES) {
    throw new UsageError(
      `${flags.chunkSize !== undefined ? `--chunk-size ${flags.chunkSize}` : flags.block !== undefined ? `--block ${flags.block}` : `"chunkSize" ${size}`}: a block of stdin is stored with its task, at most ${formatBytes(MAX_BLOCK_BYTES)}; ` +
        'give --block 16MiB or less, or save the stream to a file and run it in chunks (run FILE --pipe --chunk-size 64MiB)',
    );
  }
  if (!existing && size === undefined && input.settings.lines === undefined) input.settings.chunkSize = DEFAULT_BLOCK;
}

/**
 * A list (`--items`, or stdin without `--pipe`) is one task per item: a chunk size or a line
 * count given for it would be ignored, so it is exit 2 saying what cuts what.
 */
export function refuseChunking(input: RunInput, flags: RawRunFlags, stdinSource: boolean): void {
  if (input.settings.chunkSize === undefined && input.settings.lines === undefined) return;
  const flag = flags.block !== undefined ? '--block' : flags.chunkSize !== undefined ? '--chunk-size' : flags.lines !== undefined ? '--lines' : input.settings.lines !== undefined ? 'the job file\'s "lines"' : 'the job file\'s "chunkSize"';
  throw new UsageError(
    stdinSource
      ? `${flag} cuts stdin into blocks only with --pipe: a list on stdin is one task per line; add --pipe to cut it into blocks (run - --pipe --block 1MiB --exec CMD), or leave ${flag} out`
      : flags.items === '-'
        ? `${flag} cuts stdin into blocks as \`run - --pipe\`; --items - reads a list, one task per item: give stdin as the source (run - --pipe --block 1MiB), or leave ${flag} out`
        : `${flag} cuts a file into chunks; --items reads a list, one task per item: leave ${flag} out, or run the file itself in chunks (run FILE --pipe ${flag === '--lines' ? '--lines N' : '--chunk-size 1MiB'})`,
  );
}

/** A new block size for stdin's batch would give every block a new key, and run the stream again: a new batch. */
export function checkBlockSize(stored: JobSettings, changed: string[], batch: string): void {
  if (!changed.includes('chunkSize') && !changed.includes('lines')) return;
  const was = stored.lines ? `every ${stored.lines} lines` : `in blocks of ${formatBytes(stored.chunkSize)}`;
  throw new UsageError(`batch ${printable(batch)} cut stdin ${was}; its task keys stand for those blocks, so another size needs a new batch: --batch ${printable(batch)}-2`);
}

/** A block is not an item: `{item}`, `{1}` and `{item.FIELD}` have no value (the block is on the command's stdin). */
export function refuseItemPlaceholders(settings: JobSettings): void {
  for (const [what, template] of [['--exec', settings.handler?.kind === 'exec' ? settings.handler.template : undefined], ['--output', settings.output?.template]] as const) {
    const m = template === undefined ? null : ITEM_PLACEHOLDER.exec(template);
    if (m) throw new UsageError(`${what}: ${m[0]} is a placeholder of an item; \`run - --pipe\` gives each command a block of lines on its stdin, which has none (use {#} or {key} to tell blocks apart, or --items - --pipe for one item a task)`);
  }
}
