import { awaitBatch } from '../await-batch.js';
import { ridingOut } from '../../coordinator/outage.js';
import type { ShutdownSignal } from '../../coordinator/run-types.js';
import { signalOutcome } from '../../run/run-outcome.js';
import { watchSignalsDuringStartup } from '../../run/signals.js';
import { startRun } from '../../run/start-run.js';
import { EXIT } from '../../exit-codes.js';
import { describeHandler, settingsOf, storedDefinition } from '../../job/job-definition.js';
import { inputFromFlags, invocationOf, type Invocation, type RawRunFlags } from '../../job/run-options.js';
import { handlersOf } from '../../job/stages.js';
import { describeStore, isPostgresUrl, openStore, resolveDbPath, trustedOwners, type TrustedOwners } from '../../store/open-store.js';
import type { BatchRecord, QueryStore, TaskStore } from '../../store/task-store.js';
import { printable } from '../format.js';
import { line, type Io } from '../io.js';
import { keepWorkingWithoutOutput } from '../lost-output.js';
import { resolveBatch } from '../resolve-batch.js';
import { driveRun, runPlace } from '../drive-run.js';

export interface WorkerFlags extends RawRunFlags {
  follow?: boolean;
}

/**
 * How often `worker --follow` looks for new work when there is none: every 2 s at first,
 * doubling while nothing turns up, up to every 10 s (what idle hosts cost a shared server:
 * docs/postgres-fleet.md).
 */
const FOLLOW_POLL_MS = 2000;
const FOLLOW_POLL_MAX_MS = 10_000;

/**
 * `splitdance worker`: join the batches already in the store (no splitting) and work on
 * them with each batch's stored handler and policy, one batch at a time, until none has
 * work left; `--follow` keeps polling for new batches. Many workers, on many machines
 * with a PostgreSQL store, cooperate like overlapping `run`s. `--batch B` waits for B to
 * appear, so workers can be started beside (or before) the `run` that creates it.
 */
export async function workerCommand(flags: WorkerFlags, io: Io): Promise<number> {
  const inv = invocationOf(inputFromFlags(flags, io.cwd)); // every flag validated before the store is opened
  keepWorkingWithoutOutput(); // a closed or full stdout must not end the work half-done
  const dbPath = resolveDbPath(flags.db, io.cwd, io.env);
  const trust = trustedOwners(flags.trustStoreOwner);
  // A signal between batches (or while workers start) must end the command with 130/143,
  // not kill it mid-step; while a batch runs, its coordinator drains as `run` does.
  const signals = watchSignalsDuringStartup();
  try {
    return await serve(flags, inv, { dbPath, trust }, io, signals.seen, signals.signalled);
  } finally {
    signals.dispose();
  }
}

const exitFor = (signal: ShutdownSignal) => signalOutcome(signal).exitCode;

async function serve(
  flags: WorkerFlags,
  inv: Invocation,
  { dbPath, trust }: { dbPath: string; trust: TrustedOwners },
  io: Io,
  seen: () => ShutdownSignal | null,
  signalled: Promise<void>,
): Promise<number> {
  if (flags.batch !== undefined) {
    const signal = await awaitBatch(dbPath, flags.batch, flags.quiet ?? false, io, seen, { trust });
    if (signal) return exitFor(signal);
  }
  let worst: number = EXIT.OK;
  // Between batches too, a server restarting is waited out as a run waits it out (outage.ts).
  const note = (m: string) => flags.quiet || line(io.stderr, m);
  let saidWaiting = false;
  let wait = FOLLOW_POLL_MS;
  // A PostgreSQL store stays open between polls: a connection opened each time costs the server a
  // backend's start. A SQLite file is opened anew each time, so a store deleted and made again is seen.
  const keepOpen = flags.follow === true && isPostgresUrl(dbPath);
  let store: TaskStore | null = null;
  try {
    for (;;) {
      // --follow keeps polling for new batches, so also for a store that does not exist yet.
      store ??= flags.follow ? await ridingOut(() => openStore(dbPath, 'existing', { trust }), note) : await ridingOut(() => openStore(dbPath, 'write', { trust }), note);
      if (!store) {
        if (!saidWaiting && !flags.quiet) line(io.stderr, `waiting for the store ${printable(describeStore(dbPath))} to be created (polling every ${FOLLOW_POLL_MS / 1000}–${FOLLOW_POLL_MAX_MS / 1000} s; Ctrl-C stops)`);
        saidWaiting = true;
        if (await pause(seen, wait)) return exitFor(seen()!);
        wait = Math.min(wait * 2, FOLLOW_POLL_MAX_MS);
        continue;
      }
      let worked = false;
      try {
        for (const batch of await ridingOut(() => candidates(store!, flags.batch), note)) {
          if (seen()) return exitFor(seen()!);
          const code = await workOn(store, batch, flags, inv, dbPath, io, seen, signalled);
          if (code === null) continue;
          worked = true;
          if (code === EXIT.SIGINT || code === EXIT.SIGTERM) return code;
          worst = Math.max(worst, code);
        }
      } finally {
        if (!keepOpen) {
          await store.close();
          store = null;
        }
      }
      if (!flags.follow) {
        if (!worked && !flags.quiet) line(io.stderr, 'no batch in the store has work left');
        return worst;
      }
      if (worked) wait = FOLLOW_POLL_MS;
      if (await pause(seen, wait)) return exitFor(seen()!);
      wait = Math.min(wait * 2, FOLLOW_POLL_MAX_MS);
    }
  } finally {
    await store?.close();
  }
}

/** Waits one poll of --follow (`ms`); true when a signal came meanwhile. */
async function pause(seen: () => ShutdownSignal | null, ms: number): Promise<boolean> {
  for (let waited = 0; waited < ms && !seen(); waited += 100) await new Promise((r) => setTimeout(r, 100));
  return seen() !== null;
}

async function candidates(store: QueryStore, name: string | undefined): Promise<BatchRecord[]> {
  if (name !== undefined) return [await resolveBatch(store, name)];
  return (await store.listBatches()).filter((b) => !b.paused);
}

/** Runs one batch to its end; null when it has nothing to do or no stored handler. */
async function workOn(
  store: TaskStore,
  batch: BatchRecord,
  flags: WorkerFlags,
  inv: Invocation,
  dbPath: string,
  io: Io,
  seen: () => ShutdownSignal | null,
  signalled: Promise<void>,
): Promise<number | null> {
  // Index lookups, not counts: --follow asks this of every batch in the store at every look.
  const left = await ridingOut(() => store.progress(batch.id), (m) => flags.quiet || line(io.stderr, m));
  if (!left.unfinished) return null;
  const settings = settingsOf(storedDefinition(batch));
  const handlers = handlersOf(settings);
  if (Object.keys(handlers).length === 0) {
    line(io.stderr, `batch ${printable(batch.name)} has no stored handler; run it once with --exec or --handler`);
    return null;
  }
  const signals = { seen, signalled };
  let start;
  try {
    start = await startRun({ kind: 'stored', store, batch, settings, inv }, runPlace(dbPath, flags, io), signals); // `runBatch` grows the pool to the batch's work
  } catch (err) {
    // No worker process could be started at all: the machine's limit, for every batch alike.
    if ((err as Error).name === 'ResourceError') throw err;
    // One batch with a broken handler must not stop a worker serving the others.
    line(io.stderr, `batch ${printable(batch.name)}: its handler does not load, skipped: ${printable((err as Error).message)}`);
    return EXIT.USAGE;
  }
  if ('signal' in start) return exitFor(start.signal); // signalled while the workers loaded the handler
  // The definition is code from the store, which anyone who can write the store chose: say
  // what is about to run as this user (docs/trust-model.md).
  if (!flags.quiet) line(io.stderr, `batch ${printable(batch.name)}: running its stored definition ${printable(describeHandler(settings.handler, settings.stages))}`);
  return driveRun(start.started, flags, io);
}

