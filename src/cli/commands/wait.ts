import { UsageError } from '../../errors.js';
import { EXIT } from '../../exit-codes.js';
import { parseDuration } from '../../job/units.js';
import { awaitBatch } from '../../run/await-batch.js';
import { installSignals, signalOf } from '../../run/signals.js';
import { waitUntilDone } from '../../run/wait-batch.js';
import { signalOutcome } from '../../run/run-outcome.js';
import { batchStatus, verdict, type BatchStatus } from '../../status/batch-status.js';
import { describeStore, resolveDbPath } from '../../store/open-store.js';
import { monotonicMs } from '../../wall-steps.js';
import { duration, printable } from '../format.js';
import { line, type Io, type OutputFlags } from '../io.js';
import { commandLineFor } from '../suggested-commands.js';
import { withBatch } from '../with-store.js';

export interface WaitFlags extends OutputFlags {
  db?: string;
  batch?: string;
  timeout?: string;
  interval?: string;
}

/**
 * `splitdance wait [--batch B] [--timeout D]`: blocks until the batch is done, whoever runs it
 * (a cron `run`, `worker`s on other hosts), and exits with its verdict: 0 every task SUCCESS,
 * 1 done with FAILED or CANCELLED tasks, 3 not done when --timeout came first. It prints one
 * line, the verdict (`--json`: the batch's status object instead; `--quiet`: nothing). A batch
 * named with --batch that does not exist yet is waited for too (within the same --timeout).
 */
export async function waitCommand(flags: WaitFlags, io: Io): Promise<number> {
  const timeoutMs = flags.timeout === undefined ? null : parseDuration(flags.timeout, '--timeout');
  if (timeoutMs === 0) throw new UsageError(`--timeout expects a duration above 0, e.g. 30m; got "${flags.timeout}"`);
  const intervalMs = parseDuration(flags.interval ?? '1s', '--interval');
  if (intervalMs <= 0) throw new UsageError(`--interval expects a duration above 0; got "${flags.interval}"`);
  const deadline = timeoutMs === null ? null : monotonicMs() + timeoutMs;
  const signals = installSignals(['SIGINT', 'SIGTERM']);
  const verbose = (m: string) => {
    if (flags.verbose && !flags.quiet) line(io.stderr, m);
  };
  const signalled = () => signalOutcome(signalOf(signals.signal) ?? 'SIGINT').exitCode;
  try {
    if (flags.batch !== undefined) {
      const db = resolveDbPath(flags.db, io.cwd, io.env);
      // The --timeout as a signal, checked on the monotonic clock (a timer of weeks overflows Node's).
      const late = new AbortController();
      const check = deadline === null ? null : setInterval(() => monotonicMs() >= deadline && late.abort('timeout'), Math.min(1000, timeoutMs!)).unref();
      try {
        if (!(await awaitBatch(db, flags.batch, AbortSignal.any([signals.signal, late.signal]), verbose, { readonly: true }))) {
          if (signals.signal.aborted) return signalled();
          // A failure's summary: said with --quiet and --json too (on stderr).
          line(io.stderr, `batch "${printable(flags.batch)}" did not appear in ${printable(describeStore(db))} within ${duration(timeoutMs)}`);
          return EXIT.INCOMPLETE;
        }
      } finally {
        if (check) clearInterval(check);
      }
    }
    return await withBatch(
      flags,
      io,
      async (store, batch, { target }) => {
        const paused = () => {
          if (!flags.quiet) line(io.stderr, `batch ${printable(batch.name)} is paused: it is not done until \`${commandLineFor(target, ['resume'])}\`${timeoutMs === null ? ' (no --timeout: waiting)' : ''}`);
        };
        const end = await waitUntilDone(store, batch, { intervalMs, deadline, signal: signals.signal, note: verbose, paused });
        if (end.kind === 'signal') return signalOutcome(end.signal).exitCode;
        const s = await batchStatus(store, batch);
        if (flags.json) {
          const { clusters: _clusters, ...json } = s;
          line(io.stdout, JSON.stringify(json));
        } else if (!flags.quiet || verdict(s) !== EXIT.OK) line(io.stderr, verdictLine(s, timeoutMs)); // --quiet: the summary on failure only
        return verdict(s);
      },
      { readonly: true },
    );
  } finally {
    signals.dispose();
  }
}

/** `done: 7 succeeded of 7 (batch B)`, `done with failures: …`, or `not done after 30s: …`. */
function verdictLine(s: BatchStatus, timeoutMs: number | null): string {
  const of = `of ${s.total} (batch ${printable(s.batch)})`;
  if (!s.done) {
    const open = s.pending + s.retrying + s.running + s.queued;
    const parts = [`${s.pending} pending`, `${s.retrying} retrying`, `${s.running} running`, `${s.queued} queued`].filter((p) => !p.startsWith('0 '));
    const outputs = open === 0 && s.outputsPending ? `${s.outputsPending} declared output(s) not in place ` : '';
    return `not done after ${duration(timeoutMs)}: ${outputs || `${open} to go (${parts.join(', ')}) `}${of}`;
  }
  if (s.failed + s.cancelled === 0) return `done: ${s.succeeded} succeeded ${of}`;
  const bad = [`${s.failed} failed`, ...(s.cancelled ? [`${s.cancelled} cancelled`] : [])].join(', ');
  return `done with failures: ${bad}, ${s.succeeded} succeeded ${of}`;
}
