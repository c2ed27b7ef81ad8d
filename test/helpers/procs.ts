import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** Live (non-zombie) processes whose command line contains `marker`. */
export function liveProcesses(marker: string): string[] {
  let out: string;
  try {
    out = execFileSync('ps', ['-eo', 'pid=,stat=,args='], { encoding: 'utf8' });
  } catch {
    return [];
  }
  return out
    .split('\n')
    .filter((l) => l.includes(marker) && !/^\s*\d+\s+Z/.test(l) && !l.includes('ps -eo'));
}

/**
 * Live (non-zombie) processes whose environment contains `marker` (e.g. a test's unique
 * temp dir): finds a run's workers and their children even when the store has no record.
 */
export function processesWithEnv(marker: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (!readFileSync(`/proc/${entry}/environ`, 'latin1').includes(marker)) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (stat[stat.lastIndexOf(')') + 2] !== 'Z') found.push(Number(entry));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}

/** The direct children of a process (a run's workers or spawner helpers), as its /proc task lists them. */
export function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** A process's state letter from /proc (`S`, `T` stopped, `Z` zombie …), or 'gone'. */
export function processState(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat[stat.lastIndexOf(')') + 2]!;
  } catch {
    return 'gone';
  }
}

/** Whether signal `signo` (9: SIGKILL) is pending for the process, as /proc shows its pending sets. */
export function signalPending(pid: number, signo: number): boolean {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return [...status.matchAll(/^(?:SigPnd|ShdPnd):\s*([0-9a-f]+)/gm)].some((m) => (BigInt(`0x${m[1]}`) & (1n << BigInt(signo - 1))) !== 0n);
  } catch {
    return false;
  }
}

/**
 * Live `sleep MARKER` commands, read from /proc: no `ps` child, whose synchronous start under
 * load would hold this process's event loop, and with it the run the test is watching.
 */
export function sleeping(marker: string): number {
  let n = 0;
  for (const pid of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8') !== `sleep\0${marker}\0`) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (stat[stat.lastIndexOf(')') + 2] !== 'Z') n++;
    } catch {
      // gone meanwhile
    }
  }
  return n;
}
