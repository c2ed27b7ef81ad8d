// What the fault tests of groups (SPEC §10) share: a project whose work is given as argv, so the
// same test runs a handler's `batch` export or, later, an `--exec … -n N` command, and the calls
// read back from the side-effect log (fixtures/handlers/record-batch.mjs's format).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { handler, waitFor } from './cli.js';
import { processState } from './procs.js';
import { projectWithFiles } from './project.js';
import { logEntries } from './store.js';

/** How a group's items are run: the flags after `run src` that name the work. */
export interface GroupWork {
  name: string;
  args: string[];
}

/** A handler module exporting `batch` (64 items per call, the default bound). */
export const batchHandler: GroupWork = { name: 'a handler\'s batch export', args: ['--handler', handler('record-batch')] };

/** The batch export with at most `maxItems` items per call (its module's `maxItems` export), written into `dir`. */
export function batchHandlerOf(dir: string, maxItems: number): GroupWork {
  const path = join(dir, `record-batch-${maxItems}.mjs`);
  writeFileSync(path, `export { batch } from ${JSON.stringify(handler('record-batch'))};\nexport const maxItems = ${maxItems};\n`);
  return { name: `a handler's batch export of ${maxItems}`, args: ['--handler', path] };
}

/** `n` files to run in groups, with a side-effect log and a folder of per-key canaries; `SD_MARK` finds the run's processes. */
export function groupProject(n: number) {
  const p = projectWithFiles(n, 'sd-groups-');
  const canaries = join(p.dir, 'canaries');
  mkdirSync(canaries);
  const env: Record<string, string> = { SIDE_EFFECT_LOG: p.log, CANARY_DIR: canaries, SD_MARK: p.dir };
  return { ...p, env };
}

/** One call (or group's command) as the log shows it. */
export interface Call {
  id: string;
  pid: number;
  size: number;
  keys: string[];
  /** Whether it logged its ends (a call whose worker died has none). */
  ended: boolean;
}

/** Every call in the log, in the order each started. */
export function callsIn(log: string): Call[] {
  const calls = new Map<string, Call>();
  for (const e of logEntries(log)) {
    if (e.type === 'double' || e.call === undefined) continue;
    const call = calls.get(e.call) ?? { id: e.call, pid: e.pid, size: e.size ?? 0, keys: [], ended: false };
    if (e.type === 'start') call.keys.push(e.key);
    else call.ended = true;
    calls.set(e.call, call);
  }
  return [...calls.values()];
}

/** The calls running now: started, not ended (read while the run lives). */
export const runningCalls = (log: string): Call[] => callsIn(log).filter((c) => !c.ended);

/**
 * Whether what a dead run's stopped workers (`stopped`) held may be looked at: they are gone
 * (a new run killed them, as it must before it runs their items), or one of the items of their
 * calls (`cut`) started in another process (which must never happen while they live).
 */
function stoppedSettled(log: string, stopped: number[], cut: Call[]): boolean {
  if (stopped.every((pid) => ['gone', 'Z'].includes(processState(pid)))) return true;
  const keys = new Set(cut.flatMap((c) => c.keys));
  return callsIn(log).some((c) => !stopped.includes(c.pid) && c.keys.some((k) => keys.has(k)));
}

/**
 * Waits until the stopped (SIGSTOPped) workers are gone, or their cut calls' items ran
 * elsewhere, then lets whatever is left of them go on (SIGCONT): a run that did not kill them
 * before running their items is then caught running an item twice at once.
 */
export async function releaseStopped(log: string, stopped: number[], cut: Call[]): Promise<void> {
  await waitFor(() => stoppedSettled(log, stopped, cut), 30_000, 'the stopped workers gone, or their items run elsewhere');
  for (const pid of stopped) {
    try {
      process.kill(pid, 'SIGCONT');
    } catch {
      // killed by the run that took their items back
    }
  }
}
