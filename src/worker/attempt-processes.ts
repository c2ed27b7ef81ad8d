import { readFileSync } from 'node:fs';
import { monotonicMs } from '../wall-steps.js';
import { groupAlive, killGroup } from './kill-group.js';
import { OWNER_VAR, scanProcesses } from './owner-processes.js';
import type { TaskMessage } from './protocol.js';

/** After SIGKILL, how long what is left gets to be gone (an uninterruptible sleep can delay it), as for an attempt's group. */
const AFTER_KILL_MS = 1000;
const POLL_MS = 20;

/** What an exec attempt's command gets over its worker's environment. */
export function taskVars(task: TaskMessage): Record<string, string> {
  return {
    SPLITDANCE_KEY: task.key,
    SPLITDANCE_PATH: task.payload.path,
    SPLITDANCE_BATCH: task.batch,
    SPLITDANCE_ATTEMPT: String(task.attempt),
    ...(task.output ? { SPLITDANCE_OUT: task.output.temp } : {}),
    ...(task.stage ? { SPLITDANCE_STAGE: task.stage } : {}),
  };
}

/**
 * The environment entries only the processes of this one attempt carry, as /proc shows them
 * (bytes read as latin1): its variables, and the run's owner when one is set. The attempt
 * number makes them the attempt's, not the task's: a command a user started by hand with the
 * same key, or an earlier attempt's leftover, is not matched.
 */
export function attemptMark(task: TaskMessage, owner = process.env[OWNER_VAR]): string[] {
  const vars = { ...taskVars(task), ...(owner ? { [OWNER_VAR]: owner } : {}) };
  return Object.entries(vars).map(([k, v]) => `\0${Buffer.from(`${k}=${v}`, 'utf8').toString('latin1')}\0`);
}

/** What a dead worker may have left running, for `killLeftovers`. */
export interface Leftovers {
  /** Process groups it told of (its commands'), already sent SIGKILL or not. */
  groups: number[];
  /** Its attempts' marks (attemptMark), started or not as far as anyone was told. */
  marks: string[][];
  /**
   * How its spawner helper's command line begins (spawner.ts): a command the helper was
   * starting as it died has not reached its own program yet and still reads as the helper.
   */
  helper: string | null;
}

/**
 * A worker died (its spawner helper was killed, it was): SIGKILLs what is left of its
 * attempts and resolves once none is left, or AFTER_KILL_MS after the first kill. Its
 * commands' groups are known only once the helper has said it started them: one it started
 * and was killed before saying so runs on in a session of its own that nothing else would
 * stop, while its task runs again elsewhere. So every live process carrying one of its
 * attempts' marks is killed too (with its group, when it leads one: children that cleared
 * their environment), and what still reads as the dead helper. Returns the indexes of the
 * marks some process carried: those attempts had started. Without /proc only the groups are
 * killed.
 */
export async function killLeftovers({ groups, marks, helper }: Leftovers): Promise<Set<number>> {
  const seen = new Set<number>();
  let firstKill: number | null = null;
  for (;;) {
    const alive = groups.filter((g) => groupAlive(g));
    const found = marks.length || helper ? leftoverProcesses(marks, helper, seen) : [];
    if (alive.length === 0 && found.length === 0) return seen;
    firstKill ??= monotonicMs();
    if (monotonicMs() - firstKill > AFTER_KILL_MS) return seen;
    for (const g of alive) signal(() => killGroup(g, 'SIGKILL'));
    for (const { pid, leads } of found) {
      signal(() => process.kill(pid, 'SIGKILL'));
      if (leads) signal(() => killGroup(pid, 'SIGKILL'));
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

function signal(send: () => void): void {
  try {
    send();
  } catch {
    // gone meanwhile, or not ours (EPERM)
  }
}

/** Live processes carrying a mark (`seen` gets its index) or reading as the helper; `leads`: it leads its process group. */
function leftoverProcesses(marks: string[][], helper: string | null, seen: Set<number>): { pid: number; leads: boolean }[] {
  return scanProcesses((environ, pid) => {
    const i = marks.findIndex((mark) => mark.every((entry) => environ.includes(entry)));
    if (i >= 0) {
      seen.add(i);
      return true;
    }
    return helper !== null && commandLine(pid).startsWith(helper);
  }).map(({ pid, pgrp }) => ({ pid, leads: pgrp === pid }));
}

function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'latin1');
  } catch {
    return '';
  }
}
