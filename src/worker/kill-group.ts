import { readFileSync, readdirSync } from 'node:fs';

/** Signals a whole process group; a group that is already gone is not an error. */
export function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}

/**
 * Whether a live process is left in the group. Zombies do not count: an orphan re-parented
 * to an init that never reaps stays a member of its group forever, and no signal can
 * reach it anyway.
 */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
  return groupMembers(pgid, null)?.length !== 0;
}

/** Whether the process is stopped by a signal (SIGSTOP, SIGTSTP; state `T` in /proc); false if gone or unknown. */
export function processStopped(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat[stat.lastIndexOf(')') + 2] === 'T';
  } catch {
    return false;
  }
}

/** The live processes of a group other than `except`, read from /proc; null without /proc. */
export function groupMembers(pgid: number, except: number | null): number[] | null {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return null;
  }
  const found: number[] = [];
  for (const entry of entries) {
    const code = entry.charCodeAt(0);
    if (code < 48 || code > 57 || Number(entry) === except) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
    } catch {
      continue; // gone meanwhile
    }
    // "pid (comm) state ppid pgrp …": comm may hold spaces and parentheses, so cut at the last ')'.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z' && state !== 'X') found.push(Number(entry));
  }
  return found;
}
