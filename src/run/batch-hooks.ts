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
import type { ShutdownSignal } from '../coordinator/run-types.js';
import { isDeadOwner, ownerId } from '../lease-owner.js';
import { failpoint } from '../store/failpoint.js';
import { HOOK_OUTPUT_MAX, type BatchProgress, type BatchRecord, type Counts, type HookKind, type HookStore } from '../store/task-store.js';
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
 * Runs the hooks of `batch`, at its end with `counts`, that no start ran yet for this end.
 * `signals` stop a hook's command (its run stays recorded, unfinished: the next start runs it
 * again). Says what ran, and how it ended, through `note`.
 */
export async function runHooks(
  store: HookStore & Pick<BatchProgress, 'progress'>,
  batch: BatchRecord,
  settings: HookSettings,
  counts: Counts,
  note: (message: string) => void,
  signals: { seen(): ShutdownSignal | null; each(listener: (signal: ShutdownSignal) => void): () => void },
): Promise<void> {
  const hooks = hooksFor(settings, counts);
  if (hooks.length === 0) return;
  const { lastFinishedAt } = await store.progress(batch.id);
  const endMark = endMarkOf(counts, lastFinishedAt);
  const owner = ownerId();
  for (const [hook, command] of hooks) {
    if (signals.seen()) return;
    failpoint('hookbefore');
    const { taken, record } = await store.takeHook({ batchId: batch.id, hook, endMark, command, owner, now: Date.now(), leaseMs: HOOK_LEASE_MS }, isDeadOwner);
    if (!taken) {
      if (record.endedAt === null) note(`--on-${hook} (${record.id}) is running for this end of the batch elsewhere (${record.owner})`);
      continue;
    }
    const again = record.runs > 1 ? ` again (run ${record.runs}: a start that ran it died)` : '';
    note(`--on-${hook}: running ${record.id}${again}`);
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
    const renew = setInterval(() => void store.renewHook(batch.id, hook, endMark, owner, Date.now() + HOOK_LEASE_MS).catch(() => undefined), HOOK_LEASE_MS / 3);
    let end: Awaited<ReturnType<typeof runCommand>>;
    try {
      end = await runCommand(hookLine(command, batch.name), env, (line) => note(`--on-${hook}: ${line}`), signals);
    } finally {
      clearInterval(renew);
    }
    // Stopped by a signal: left unfinished, for the next start to run again.
    if (end.stopped) return note(`--on-${hook} (${record.id}) was stopped by ${end.stopped}; the next start of the batch runs it again`);
    await store.endHook(batch.id, hook, endMark, owner, { endedAt: Date.now(), exitCode: end.exitCode, signal: end.signal, output: end.output });
    failpoint('hookafter');
    const how = end.exitCode === 0 ? 'exited 0' : end.signal ? `was killed by ${end.signal}` : `failed: exit ${end.exitCode}`;
    note(`--on-${hook} (${record.id}) ${how}${end.exitCode === 0 ? '' : '; `splitdance status` shows its output'}`);
  }
}

/**
 * Runs `line` with /bin/sh in a process group of its own, its stdout and stderr said line by
 * line and their last HOOK_OUTPUT_MAX characters kept. A signal to this process stops the group.
 */
function runCommand(
  line: string,
  vars: Record<string, string>,
  say: (line: string) => void,
  signals: { each(listener: (signal: ShutdownSignal) => void): () => void },
): Promise<{ exitCode: number | null; signal: string | null; output: string; stopped: ShutdownSignal | null }> {
  return new Promise((resolve) => {
    const child = spawn('/bin/sh', ['-c', line], { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...vars } });
    let output = '';
    let partial = '';
    let stopped: ShutdownSignal | null = null;
    const take = (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      output = (output + text).slice(-HOOK_OUTPUT_MAX);
      const lines = (partial + text).split('\n');
      partial = lines.pop()!.slice(-HOOK_OUTPUT_MAX);
      for (const l of lines) say(l);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    const group = (sig: NodeJS.Signals) => {
      try {
        process.kill(-child.pid!, sig);
      } catch {
        // Gone already.
      }
    };
    let kill: NodeJS.Timeout | undefined;
    const off = signals.each((signal) => {
      stopped ??= signal;
      group('SIGTERM');
      kill ??= setTimeout(() => group('SIGKILL'), HOOK_GRACE_MS);
    });
    const done = (exitCode: number | null, signal: string | null) => {
      off();
      clearTimeout(kill);
      if (partial) say(partial);
      resolve({ exitCode, signal, output, stopped });
    };
    child.on('error', (err) => {
      output = `${err.message}\n`;
      done(127, null);
    });
    child.on('close', (code, signal) => done(code, signal));
  });
}
