/**
 * The kernel's OOM killer picks the process with the highest badness: its memory plus
 * oom_score_adj thousandths of the memory there is (proc(5)). What splitdance starts (module
 * workers, `--exec` commands and what they start) raises its oom_score_adj to the maximum, so
 * under memory pressure it goes before the coordinator and its spawner helpers, which keep
 * theirs. Before this, a 300 MiB cgroup running `-j 6` commands of 45 MiB lost its
 * coordinator as readily as a command: 8 supervised restarts finished 0 of 30 tasks.
 * Any process may raise its children's value; only a privileged one may lower it below
 * what it was given, so a coordinator run with a low value keeps it.
 */
import { readFileSync, writeFileSync } from 'node:fs';

/** What the processes a run starts are given: the kernel picks them first (the same in spawner.c). */
const STARTED_OOM_SCORE_ADJ = 1000;

/** Sets a process's oom_score_adj to STARTED_OOM_SCORE_ADJ; where /proc does not let it, nothing changes. */
export function raiseOomScore(pid: number | 'self'): void {
  try {
    writeFileSync(`/proc/${pid}/oom_score_adj`, String(STARTED_OOM_SCORE_ADJ));
  } catch {
    // no /proc, or not ours to change: the kernel's own order stays
  }
}

let raisedHere: boolean | undefined;

/**
 * Whether this process already has STARTED_OOM_SCORE_ADJ (a forked worker raised its own), so
 * the children it starts inherit it; read once. The coordinator has not: what it starts
 * itself (Node's spawn, `--pipe`) is raised after the spawn.
 */
export function oomScoreInherited(): boolean {
  if (raisedHere === undefined) {
    try {
      raisedHere = Number(readFileSync('/proc/self/oom_score_adj', 'latin1')) >= STARTED_OOM_SCORE_ADJ;
    } catch {
      raisedHere = true; // nothing to raise where there is no /proc
    }
  }
  return raisedHere;
}
