/**
 * `--on-complete CMD` / `--on-failure CMD` (SPEC §10): when a run or worker sees its batch at
 * its end (every task finished, every declared output in place), it runs the batch's hooks
 * once: `--on-complete` whatever the verdict, `--on-failure` when a task failed or was
 * cancelled. Each hook's run is recorded in the store before its command starts (takeHook), so
 * across crashes, reruns and hosts only one start runs it. A run killed while the command runs
 * leaves it recorded and unfinished: the next start sees its owner dead (or its hold run out)
 * and runs it again with the same SPLITDANCE_HOOK_ID, so a hook runs at least once, and more
 * than once only after such a kill. A batch that ends again after more work (retry-failed, new
 * files) runs its hooks again, with a new id.
 */
import { spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import type { ShutdownSignal } from '../coordinator/run-types.js';
import { isDeadOwner, isLiveLocalOwner, ownerId, parseOwner } from '../lease-owner.js';
import { ridingOut } from '../coordinator/outage.js';
import { failpoint } from '../store/failpoint.js';
import { HOOK_OUTPUT_MAX, type BatchProgress, type BatchRecord, type Counts, type HookKind, type HookStore, type QueryStore } from '../store/task-store.js';
import { hookLine } from '../template/hook-command.js';

/** How long a start holds a running hook without renewing (renewed every third of it). */
const HOOK_LEASE_MS = 30_000;
/** After a signal, how long the hook's processes have after SIGTERM before SIGKILL. */
const HOOK_GRACE_MS = 5_000;

export interface HookSettings {
  onComplete: string | null;
  onFailure: string | null;
}

/** The hooks a batch at its end with `counts` runs. */
function hooksFor(settings: HookSettings, counts: Counts): [HookKind, string][] {
  const hooks: [HookKind, string][] = [];
  if (settings.onFailure !== null && counts.failed + counts.cancelled > 0) hooks.push(['failure', settings.onFailure]);
  if (settings.onComplete !== null) hooks.push(['complete', settings.onComplete]);
  return hooks;
}

/** Whether the batch is at its end: nothing left to run. */
export function atEnd(c: Counts): boolean {
  return c.pending + c.retrying + c.running + c.queued === 0;
}

/** The end a batch's hooks run for: its last finish and its counts then (a later end after more work differs). */
function endMarkOf(c: Counts, lastFinishedAt: number | null): string {
  return `${lastFinishedAt ?? 0}/${c.total}/${c.succeeded}/${c.failed}/${c.cancelled}`;
}

/**
 * The batch's counts and last finish, read until they agree (nothing finished between the two
 * reads), or null when it is not at its end: a task left to run, or a declared output not in place.
 */
async function endOf(store: Pick<BatchProgress, 'progress' | 'counts'> & Pick<QueryStore, 'pendingOutputs'>, batchId: number, note: (m: string) => void): Promise<{ counts: Counts; endMark: string } | null> {
  for (let tries = 0; tries < 3; tries++) {
    const before = (await ridingOut(() => store.progress(batchId), note)).lastFinishedAt;
    const counts = await ridingOut(() => store.counts(batchId), note);
    if (!atEnd(counts)) return null;
    if (counts.succeeded > 0 && (await ridingOut(() => store.pendingOutputs(batchId), note)).length > 0) return null;
    if ((await ridingOut(() => store.progress(batchId), note)).lastFinishedAt === before) return { counts, endMark: endMarkOf(counts, before) };
  }
  return null; // still moving: whoever ends it runs the hooks
}

/** What a start can tell of a hook's owner: dead on this host, or a live process here (never taken over). */
const JUDGE = { dead: isDeadOwner, liveHere: isLiveLocalOwner };

/**
 * Runs the hooks of `batch` that no start ran yet for its end, if it is at its end. `signals`
 * stop a hook's command (its run stays recorded, unfinished: the next start runs it again).
 * Says what ran, and how it ended, through `note`. Returns whether every hook owed at this end
 * has ended (false: not at its end, or one runs elsewhere, or was stopped, and is to be looked at again).
 */
export async function runHooks(
  store: HookStore & Pick<BatchProgress, 'progress' | 'counts'> & Pick<QueryStore, 'hooksOf' | 'pendingOutputs'>,
  batch: BatchRecord,
  settings: HookSettings,
  note: (message: string) => void,
  signals: { seen(): ShutdownSignal | null; each(listener: (signal: ShutdownSignal) => void): () => void },
): Promise<boolean> {
  if (settings.onComplete === null && settings.onFailure === null) return true;
  const end = await endOf(store, batch.id, note);
  if (!end) return false;
  let settled = true;
  const { counts, endMark } = end;
  // A read first: an end whose hooks all ran costs no write (a worker looks at finished batches).
  const done = new Set((await ridingOut(() => store.hooksOf(batch.id), note)).filter((r) => r.endMark === endMark && r.endedAt !== null).map((r) => r.hook));
  const owner = ownerId();
  for (const [hook, command] of hooksFor(settings, counts)) {
    if (done.has(hook)) continue;
    if (signals.seen()) return false;
    failpoint('hookbefore');
    const { taken, record } = await ridingOut(() => store.takeHook({ batchId: batch.id, hook, endMark, command, owner, now: Date.now(), leaseMs: HOOK_LEASE_MS }, JUDGE), note);
    if (!taken) {
      const where = parseOwner(record.owner);
      if (record.endedAt === null) {
        settled = false;
        note(`--on-${hook} ${record.id} runs elsewhere (${where ? `${where.host}, pid ${where.pid}` : record.owner})`);
      }
      continue;
    }
    // A signal that came while the hook was being recorded: it stays for the next start.
    if (signals.seen()) return false;
    const again = record.runs > 1 ? ` (start ${record.runs}: the one before died)` : '';
    note(`--on-${hook}: running ${record.id}${again}: ${command.length > 200 ? `${command.slice(0, 200)}…` : command}`);
    const env = {
      SPLITDANCE_BATCH: batch.name,
      SPLITDANCE_HOOK: hook,
      SPLITDANCE_HOOK_ID: record.id,
      SPLITDANCE_HOOK_RUN: String(record.runs),
      SPLITDANCE_VERDICT: counts.failed + counts.cancelled > 0 ? 'failed' : 'succeeded',
      SPLITDANCE_TOTAL: String(counts.total),
      SPLITDANCE_SUCCEEDED: String(counts.succeeded),
      SPLITDANCE_FAILED: String(counts.failed),
      SPLITDANCE_CANCELLED: String(counts.cancelled),
    };
    const ran = await runCommand(hookLine(command, batch.name), env, (line) => note(`--on-${hook}: ${line}`), signals, (stop) => keepHold(store, batch.id, hook, endMark, owner, note, stop));
    // Stopped by a signal, or taken over: left for the next start (or the one that took it).
    if (ran.stopped) {
      note(`--on-${hook} ${record.id} stopped by ${ran.stopped}: the next start reruns it`);
      return false;
    }
    if (ran.lost) {
      note(`--on-${hook} ${record.id}: taken over by another start`);
      settled = false;
      continue;
    }
    const ended = await ridingOut(() => store.endHook(batch.id, hook, endMark, owner, { endedAt: ran.endedAt, exitCode: ran.exitCode, signal: ran.signal, output: ran.output }), note);
    failpoint('hookafter');
    if (!ended) {
      note(`--on-${hook} ${record.id} ended, but was taken over`);
      settled = false;
      continue;
    }
    const how = ran.exitCode === 0 ? 'exited 0' : ran.signal ? `was killed by ${ran.signal}` : `failed: exit ${ran.exitCode}`;
    note(`--on-${hook} ${record.id} ${how}${ran.exitCode === 0 ? '' : '; status shows its output'}`);
  }
  return settled;
}

/**
 * Renews the hold on a running hook every third of its lease; calls `stop` when another start
 * took it over (this process was frozen, or cut off from the store for a lease). A renewal the
 * store refuses (an outage) is said once; the next one tries again. Returns the timer's stop.
 */
function keepHold(store: HookStore, batchId: number, hook: HookKind, endMark: string, owner: string, note: (m: string) => void, stop: () => void): () => void {
  let said = false;
  let released = false;
  const timer = setInterval(() => {
    store.renewHook(batchId, hook, endMark, owner, Date.now() + HOOK_LEASE_MS).then(
      // An answer that comes after the command ended (its end recorded meanwhile) is no loss.
      (held) => held || released || stop(),
      (err: unknown) => {
        if (!said && !released) note(`--on-${hook}: its hold not renewed: ${(err as Error).message.slice(0, 120)}`);
        said = true;
      },
    );
  }, HOOK_LEASE_MS / 3);
  return () => {
    released = true;
    clearInterval(timer);
  };
}

interface Ran {
  endedAt: number;
  exitCode: number | null;
  signal: string | null;
  output: string;
  /** The signal that stopped it, or null. */
  stopped: ShutdownSignal | null;
  /** Another start took it over while it ran: it was stopped. */
  lost: boolean;
}

/**
 * Runs `line` with /bin/sh in a process group of its own, each of its stdout and stderr said line
 * by line, their last HOOK_OUTPUT_MAX characters kept. A signal to this process stops the group,
 * as does losing the hold (`hold` starts keeping it and is given the stop). Ends when the shell
 * exits: what it left running in the background and still holding its output is not waited for
 * (its output after a second is not read).
 */
function runCommand(
  line: string,
  vars: Record<string, string>,
  say: (line: string) => void,
  signals: { each(listener: (signal: ShutdownSignal) => void): () => void },
  hold: (stop: () => void) => () => void,
): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn('/bin/sh', ['-c', line], { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...vars } });
    let output = '';
    let stopped: ShutdownSignal | null = null;
    let lost = false;
    const readers = [child.stdout, child.stderr].map((stream) => {
      const decoder = new StringDecoder('utf8');
      let partial = '';
      const take = (text: string) => {
        output = (output + text).slice(-HOOK_OUTPUT_MAX);
        const lines = (partial + text).split('\n');
        partial = lines.pop()!.slice(-HOOK_OUTPUT_MAX);
        for (const l of lines) say(l);
      };
      stream.on('data', (chunk: Buffer) => take(decoder.write(chunk)));
      return () => {
        take(decoder.end());
        if (partial) say(partial);
        partial = '';
      };
    });
    const group = (sig: NodeJS.Signals) => {
      try {
        process.kill(-child.pid!, sig);
      } catch {
        // Gone already.
      }
    };
    let kill: NodeJS.Timeout | undefined;
    const stopGroup = () => {
      group('SIGTERM');
      kill ??= setTimeout(() => group('SIGKILL'), HOOK_GRACE_MS);
    };
    const off = signals.each((signal) => {
      stopped ??= signal;
      stopGroup();
    });
    const release = hold(() => {
      lost = true;
      stopGroup();
    });
    let finished = false;
    const done = (exitCode: number | null, signal: string | null) => {
      if (finished) return;
      finished = true;
      off();
      release();
      clearTimeout(kill);
      // Stopped (a signal, or taken over): the shell is gone, and what is left of its group goes now.
      if (stopped || lost) group('SIGKILL');
      for (const flush of readers) flush();
      // What it left in the background may write on: read and dropped, never broken off (a write
      // to a closed pipe would kill it), and the pipes do not keep this process alive.
      for (const stream of [child.stdout, child.stderr]) {
        stream.removeAllListeners('data');
        stream.resume();
        (stream as Readable & { unref?: () => void }).unref?.();
      }
      resolve({ endedAt: Date.now(), exitCode, signal, output, stopped, lost });
    };
    child.on('error', (err) => {
      output = `${err.message}\n`;
      done(127, null);
    });
    // 'close' waits for the output pipes, which a background child may hold for ever: after the
    // shell's exit, a second for what is still in them.
    child.on('exit', (code, signal) => {
      const drained = setTimeout(() => done(code, signal), 1000);
      child.on('close', () => {
        clearTimeout(drained);
        done(code, signal);
      });
    });
  });
}
