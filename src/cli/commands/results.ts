import { UsageError } from '../../errors.js';
import { hasStages } from '../../status/batch-status.js';
import type { TaskOutcome } from '../../store/task-store.js';
import { parseStatus } from '../filters.js';
import { line, write, type Io, type OutputFlags } from '../io.js';
import { defaultedNote, withBatch } from '../with-store.js';

export interface ResultsFlags extends OutputFlags {
  db?: string;
  batch?: string;
  status?: string;
  jsonl?: boolean;
  csv?: boolean;
}

/** How much text a write gathers (a page of big results is written in pieces). */
const PIECE = 1024 * 1024;

/**
 * `splitdance results [--batch B] [--jsonl | --csv] [--status S]`: every task's key, status,
 * output path (declared outputs), last error and result (module handlers), in input order (the
 * order the source gave them: its files, lines or items; tasks a rerun added come after), one
 * per line, streamed a page at a time (memory holds one page whatever the batch's size).
 */
export async function resultsCommand(flags: ResultsFlags, io: Io): Promise<number> {
  if (flags.jsonl && flags.csv) throw new UsageError('results prints --jsonl (the default) or --csv, not both');
  const wanted = parseStatus(flags.status);
  return withBatch(
    flags,
    io,
    async (store, batch, { defaulted }) => {
      if (defaulted && !flags.quiet) line(io.stderr, defaultedNote(batch.name));
      const staged = hasStages(batch);
      const row = flags.csv ? csvRow(staged) : jsonRow(staged);
      if (flags.csv) await write(io.stdout, `${['key', ...(staged ? ['stage'] : []), 'status', 'out', 'error', 'result'].join(',')}\r\n`);
      await store.eachOutcomePage({ batchId: batch.id, status: wanted?.status, attemptedOnly: wanted?.retrying }, async (tasks) => {
        let piece = '';
        for (const t of tasks) {
          piece += row(t);
          if (piece.length >= PIECE) {
            await write(io.stdout, piece);
            piece = '';
          }
        }
        if (piece) await write(io.stdout, piece);
      });
      return 0;
    },
    { readonly: true },
  );
}

/** A success's declared output: the `out` its stored result carries (declared-outputs.ts). */
function outOf(result: unknown): string | null {
  return result !== null && typeof result === 'object' && typeof (result as { out?: unknown }).out === 'string' ? (result as { out: string }).out : null;
}

function jsonRow(staged: boolean) {
  return (t: TaskOutcome): string => {
    const result = t.result === null ? null : (JSON.parse(t.result) as unknown);
    return `${JSON.stringify({ key: t.key, ...(staged ? { stage: t.stage } : {}), status: t.status, out: outOf(result), error: t.lastError, result })}\n`;
  };
}

/** RFC 4180: a field with a comma, a quote or a line break is quoted, its quotes doubled; lines end CRLF. */
const csvField = (v: string | null): string => (v === null ? '' : /[",\r\n]/.test(v) ? `"${v.replaceAll('"', '""')}"` : v);

function csvRow(staged: boolean) {
  return (t: TaskOutcome): string => {
    const out = t.result === null ? null : outOf(JSON.parse(t.result) as unknown);
    return `${[t.key, ...(staged ? [t.stage] : []), t.status, out, t.lastError, t.result].map(csvField).join(',')}\r\n`;
  };
}
