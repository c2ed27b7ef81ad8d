import { parseCount } from '../../job/units.js';
import type { TaskRow } from '../../store/task-store.js';
import { keyMatcher, parseStatus, requireFilter } from '../filters.js';
import { cell, table } from '../format.js';
import { line, write, type Io, type OutputFlags } from '../io.js';
import { defaultedNote, withBatch } from '../with-store.js';
import { hasStages } from '../../status/batch-status.js';
import { taskJson } from '../task-json.js';

/** How much JSON `tasks --json` gathers before writing it. */
const JSON_PIECE = 1024 * 1024;

export interface TasksFlags extends OutputFlags {
  db?: string;
  batch?: string;
  status?: string;
  key?: string;
  error?: string;
  slowest?: string;
  limit?: string;
}

/** `splitdance tasks`: every matching task, tab-separated when piped, a table on a terminal, or JSON. */
export async function tasksCommand(flags: TasksFlags, io: Io): Promise<number> {
  const key = requireFilter(flags.key, '--key');
  const error = requireFilter(flags.error, '--error');
  const wanted = parseStatus(flags.status);
  const slowest = flags.slowest !== undefined ? parseCount(flags.slowest, '--slowest', { min: 1 }) : undefined;
  const limit =
    slowest ?? (flags.limit !== undefined ? parseCount(flags.limit, '--limit', { min: 1 }) : io.stdoutTty && !flags.json ? 50 : undefined);
  return withBatch(
    flags,
    io,
    async (store, batch, { defaulted }) => {
      if (defaulted && !flags.json && !flags.quiet) line(io.stderr, defaultedNote(batch.name));
      const filter = {
        batchId: batch.id,
        status: wanted?.status,
        keyMatches: await keyMatcher(store, batch.id, key),
        attemptedOnly: wanted?.retrying,
        errorContains: error,
        limit,
      };
      // With stages, a STAGE column after the key (whose first segment it is).
      const staged = hasStages(batch);
      const cells = (t: TaskRow) => [
        t.key,
        ...(staged ? [t.stage] : []),
        // On a terminal, which successes ran nothing; piped, the column stays a status (--json has upToDate).
        t.upToDate && io.stdoutTty ? `${t.status} (up to date)` : t.status,
        String(t.attempts),
        t.finishedAt && t.startedAt ? String(t.finishedAt - t.startedAt) : '',
        t.lastError ?? '',
      ];
      if (io.stdoutTty && !flags.json) {
        // A table sizes its columns from every row: it is for a terminal's screenful (--limit, 50 by default).
        const rows = await store.listTasks({ ...filter, order: slowest ? 'slowest' : 'created' });
        const header = ['KEY', ...(staged ? ['STAGE'] : []), 'STATUS', 'ATTEMPTS', 'MS', 'LAST ERROR'];
        line(io.stdout, table([header, ...rows.map((r) => cells(r).map((v) => cell(v, 80)))]));
        if (!slowest && limit !== undefined && rows.length === limit) line(io.stderr, `(first ${limit}; --limit N shows more)`);
        return 0;
      }
      // Piped or --json, every task may be asked for: page by page, each written before the next is read.
      const each = (onPage: (rows: TaskRow[]) => Promise<void>) =>
        slowest ? store.listTasks({ ...filter, order: 'slowest' }).then(onPage) : store.eachTaskPage(filter, onPage);
      if (flags.json) {
        let first = true;
        await write(io.stdout, '[');
        await each(async (rows) => {
          // Written in pieces of about JSON_PIECE: a page of 500 results of up to 1 MiB each is too long for one string.
          let piece = '';
          for (const t of rows) {
            piece += (first ? '' : ',') + JSON.stringify(taskJson(t));
            first = false;
            if (piece.length >= JSON_PIECE) {
              await write(io.stdout, piece);
              piece = '';
            }
          }
          if (piece) await write(io.stdout, piece);
        });
        await write(io.stdout, ']\n');
        return 0;
      }
      await each((rows) => write(io.stdout, rows.map((t) => `${cells(t).map((v) => cell(v, 10_000)).join('\t')}\n`).join('')));
      return 0;
    },
    { readonly: true },
  );
}
