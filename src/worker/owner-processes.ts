import { readdirSync, readFileSync } from 'node:fs';
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
/** Dead owners whose processes were sent SIGKILL, and when (monotonic ms), until none is left. */
const firstKilled = new Map<string, number>();

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
function processesOf(owners: string[]): number[] {
  if (owners.length === 0) return [];
  const marks = owners.map((owner) => `\0${OWNER_VAR}=${owner}\0`);
  return scanProcesses((environ) => marks.some((mark) => environ.includes(mark))).map((p) => p.pid);
}

/**
 * The live processes (zombies aside) but this one whose environment `match` accepts (read as
 * latin1, with a NUL before its first entry as after every one, so an entry is matched whole as
 * `\0NAME=value\0`), and the process group of each. Empty without /proc; processes of other users
 * are never matched.
 */
export function scanProcesses(match: (environ: string, pid: number) => boolean): { pid: number; pgrp: number }[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const found: { pid: number; pgrp: number }[] = [];
  for (const entry of entries) {
    const code = entry.charCodeAt(0);
    if (code < 48 || code > 57 || Number(entry) === process.pid) continue;
    try {
      const environ = `\0${readFileSync(`/proc/${entry}/environ`, 'latin1')}\0`;
      if (!match(environ, Number(entry))) continue;
      // "pid (comm) state ppid pgrp …": comm may hold spaces and parentheses, so cut at the last ')'.
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (state !== 'Z' && state !== 'X') found.push({ pid: Number(entry), pgrp: Number(pgrp) });
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
 * processes (the `tee` its output was piped to). Returns the owners some process of which is
 * still alive then (one in an uninterruptible sleep, or frozen): their tasks must not run again yet.
 */
export async function killOwnerProcesses(owners: string[]): Promise<string[]> {
  // Waited for once: a later look at an owner whose process outlived the wait only looks again.
  const now = monotonicMs();
  const started = Math.max(...owners.map((o) => firstKilled.get(o) ?? now));
  const marks = owners.map((owner) => `\0${OWNER_VAR}=${owner}\0`);
  for (;;) {
    const left = processesOf(owners);
    if (left.length === 0) {
      owners.forEach((o) => firstKilled.delete(o));
      return [];
    }
    for (const o of owners) if (!firstKilled.has(o)) firstKilled.set(o, now);
    if (monotonicMs() - started > AFTER_KILL_MS) {
      const environs = left.map((pid) => environOf(pid));
      const lingering = owners.filter((_, i) => environs.some((environ) => environ.includes(marks[i]!)));
      owners.filter((o) => !lingering.includes(o)).forEach((o) => firstKilled.delete(o));
      return lingering;
    }
    for (const pid of left) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

function environOf(pid: number): string {
  try {
    return `\0${readFileSync(`/proc/${pid}/environ`, 'latin1')}\0`;
  } catch {
    return '';
  }
}
