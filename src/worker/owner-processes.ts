import { readdirSync, readFileSync } from 'node:fs';
import { procStat } from '../lease-owner.js';
import { monotonicMs } from '../wall-steps.js';

/**
 * Names, in the environment of every process a run starts (its workers, spawner helpers,
 * commands and what they start in turn, whatever session or group they move to), the lease
 * owner of the coordinator they were started under. A run that dies with its helpers (SIGKILL
 * to the whole tree: a container's kill, the OOM killer) leaves its commands running with no
 * process of its own left to stop them; the next run on this machine takes the dead owner's
 * tasks back at once, and finds and kills those commands by this mark first.
 */
export const OWNER_VAR = 'SPLITDANCE_OWNER';

/** After SIGKILL, how long a dead owner's processes get to be gone (an uninterruptible sleep can delay it). */
const AFTER_KILL_MS = 1000;
const POLL_MS = 20;

/** Marks what this process starts from now on as started under `owner`. */
export function markChildren(owner: string): void {
  process.env[OWNER_VAR] = owner;
}

/**
 * The live processes (zombies aside) started under one of `owners`, read from /proc: the mark
 * is in the environment each was started with. Empty without /proc, and for processes of other
 * users (their environment cannot be read; a run's processes are its user's). One look reads
 * every process's environment: 15 ms at about 100 processes on a busy 2-core machine.
 */
export function processesOf(owners: string[]): number[] {
  if (owners.length === 0) return [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const marks = owners.map((owner) => `\0${OWNER_VAR}=${owner}\0`);
  const found: number[] = [];
  for (const entry of entries) {
    const code = entry.charCodeAt(0);
    if (code < 48 || code > 57 || Number(entry) === process.pid) continue;
    try {
      const environ = `\0${readFileSync(`/proc/${entry}/environ`, 'latin1')}\0`;
      if (!marks.some((mark) => environ.includes(mark))) continue;
      const state = procStat(Number(entry))?.state;
      if (state !== undefined && state !== 'Z' && state !== 'X') found.push(Number(entry));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}

/**
 * SIGKILLs every process started under one of `owners` (coordinators proven dead) and waits until
 * none is left, or AFTER_KILL_MS after the first kill. Each is killed by its pid, not its
 * group: the group of a process the dead run started directly may hold the user's own
 * processes (the `tee` its output was piped to). Returns how many were killed.
 */
export async function killOwnerProcesses(owners: string[]): Promise<number> {
  const killed = new Set<number>();
  const started = monotonicMs();
  for (;;) {
    const left = processesOf(owners);
    if (left.length === 0 || monotonicMs() - started > AFTER_KILL_MS) return killed.size;
    for (const pid of left) {
      try {
        process.kill(pid, 'SIGKILL');
        killed.add(pid);
      } catch {
        // gone meanwhile
      }
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}
