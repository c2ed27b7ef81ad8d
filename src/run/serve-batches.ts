/** `worker`'s life: join the batches in a store one at a time, and with --follow wait for more. */
import { ridingOut } from '../coordinator/outage.js';
import type { ShutdownSignal } from '../coordinator/run-types.js';
import { EXIT } from '../exit-codes.js';
import { describeHandler, settingsOf, storedDefinition } from '../job/job-definition.js';
import type { Invocation } from '../job/run-options.js';
import { handlersOf } from '../job/stages.js';
import { printable } from '../printable.js';
import { describeStore, isPostgresUrl, openStore } from '../store/open-store.js';
import type { BatchRecord, QueryStore, TaskStore } from '../store/task-store.js';
import { awaitBatch } from './await-batch.js';
import { runHooks } from './batch-hooks.js';
import { PollBackoff } from './poll-backoff.js';
import { signalOutcome } from './run-outcome.js';
import { pause, type CommandSignals } from './signals.js';
import { startRun, type RunPlace, type StartedRun } from './start-run.js';

/**
 * How often `worker --follow` looks for new work when there is none: every 2 s at first,
 * doubling while nothing turns up, up to every 10 s (what idle hosts cost a shared server:
 * docs/postgres-fleet.md).
 */
const FOLLOW_POLL_MS = 2000;
const FOLLOW_POLL_MAX_MS = 10_000;

export interface Serving {
  /** `--batch B`: only B, waited for until it appears; otherwise every unpaused batch. */
  batch: string | undefined;
  /** `--follow`: keep polling for new batches (and for a store not created yet). */
  follow: boolean;
  inv: Invocation;
  place: RunPlace;
  /** The command's signals: a signal between batches (or while workers start) ends the command with 130/143, not mid-step. */
  signals: CommandSignals;
  /** A line for the user that --quiet silences (waits, what is about to run). */
  say(m: string): void;
  /** A line for the user however quiet (a batch skipped). */
  warn(m: string): void;
  /** The batch `--batch` names, or a UsageError naming what is in the store. */
  resolve(store: QueryStore, name: string): Promise<BatchRecord>;
  /** Drives a started run to its end with the command's reporter; its exit code. */
  drive(started: StartedRun): Promise<number>;
}

const exitFor = (signal: ShutdownSignal) => signalOutcome(signal).exitCode;

/**
 * Works on the store's batches with each batch's stored handler and policy, one batch at a time,
 * until none has work left (or, with --follow, until a signal); the worst exit code of the batches
 * it ran, or 130/143 for a signal. While a batch runs, its coordinator drains as `run` does.
 */
export async function serveBatches(s: Serving): Promise<number> {
  const { dbPath, trust } = s.place;
  const { signal } = s.signals;
  const exitForSeen = () => exitFor(s.signals.seen()!);
  if (s.batch !== undefined && !(await awaitBatch(dbPath, s.batch, signal, s.say, { trust }))) return exitForSeen();
  let worst: number = EXIT.OK;
  // Finished batches whose hooks have all ended, at which last finish (hooks owed are run once seen).
  const looked = new Set<string>();
  // Between batches too, a server restarting is waited out as a run waits it out (outage.ts), saying so.
  const note = s.say;
  let saidWaiting = false;
  const poll = new PollBackoff(FOLLOW_POLL_MS, FOLLOW_POLL_MAX_MS);
  // A PostgreSQL store stays open between polls: a connection opened each time costs the server a
  // backend's start. A SQLite file is opened anew each time, so a store deleted and made again is seen.
  const keepOpen = s.follow && isPostgresUrl(dbPath);
  let store: TaskStore | null = null;
  try {
    for (;;) {
      // --follow keeps polling for new batches, so also for a store that does not exist yet.
      store ??= s.follow ? await ridingOut(() => openStore(dbPath, 'existing', { trust }), note) : await ridingOut(() => openStore(dbPath, 'write', { trust }), note);
      if (!store) {
        if (!saidWaiting) s.say(`waiting for the store ${printable(describeStore(dbPath))} to be created (polling ${poll.describe()}; Ctrl-C stops)`);
        saidWaiting = true;
        if (await pause(poll.next(), signal)) return exitForSeen();
        continue;
      }
      let worked = false;
      try {
        const open = store;
        for (const batch of await ridingOut(() => candidates(open, s), note)) {
          if (signal.aborted) return exitForSeen();
          const code = await workOn(open, batch, s, looked);
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
      if (!s.follow) {
        if (!worked) s.say('no batch in the store has work left');
        return worst;
      }
      if (worked) poll.found();
      if (await pause(poll.next(), signal)) return exitForSeen();
    }
  } finally {
    await store?.close();
  }
}

async function candidates(store: QueryStore, s: Serving): Promise<BatchRecord[]> {
  if (s.batch !== undefined) return [await s.resolve(store, s.batch)];
  return (await store.listBatches()).filter((b) => !b.paused);
}

/**
 * Runs one batch to its end; null when it has nothing to do or no stored handler. A finished
 * batch whose hooks are owed (the run that ended it died first, or `cancel` ended it) has them
 * run, once per last finish this worker sees.
 */
async function workOn(store: TaskStore, batch: BatchRecord, s: Serving, looked: Set<string>): Promise<number | null> {
  // Index lookups, not counts: --follow asks this of every batch in the store at every look.
  const left = await ridingOut(() => store.progress(batch.id), s.say);
  const settings = settingsOf(storedDefinition(batch));
  if (!left.unfinished) {
    const end = `${batch.id}/${left.lastFinishedAt}`;
    // Looked at again while a hook owed runs elsewhere (its owner may die) or outputs are pending.
    if ((settings.onComplete !== null || settings.onFailure !== null) && !looked.has(end)) {
      if (await runHooks(store, batch, settings, s.say, s.signals)) looked.add(end);
    }
    return null;
  }
  const handlers = handlersOf(settings);
  if (Object.keys(handlers).length === 0) {
    s.warn(`batch ${printable(batch.name)} has no stored handler; run it once with --exec or --handler`);
    return null;
  }
  let start;
  try {
    start = await startRun({ kind: 'stored', store, batch, settings, inv: s.inv }, s.place, s.signals.signal); // `runBatch` grows the pool to the batch's work
  } catch (err) {
    // No worker process could be started at all: the machine's limit, for every batch alike.
    if ((err as Error).name === 'ResourceError') throw err;
    // One batch with a broken handler must not stop a worker serving the others.
    s.warn(`batch ${printable(batch.name)}: its handler does not load, skipped: ${printable((err as Error).message)}`);
    return EXIT.USAGE;
  }
  if ('signal' in start) return exitFor(start.signal); // signalled while the workers loaded the handler
  // The definition is code from the store, which anyone who can write the store chose: say
  // what is about to run as this user (docs/trust-model.md).
  s.say(`batch ${printable(batch.name)}: running its stored definition ${printable(describeHandler(settings.handler, settings.stages))}`);
  return s.drive(start.started);
}
