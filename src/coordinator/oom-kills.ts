/**
 * Tells an attempt killed by the kernel's OOM killer from another SIGKILL (`kill -9`, a
 * supervisor), so its row says "killed: out of memory" and --permanent-errors can treat it
 * apart. The kernel counts its kills: per memory cgroup (`oom_kill` in cgroup v2's
 * memory.events, which counts the cgroups below it too, and in cgroup v1's
 * memory.oom_control, which does not) and for the machine (/proc/vmstat). What a run starts
 * stays in its coordinator's cgroup, so that counter is read, or the machine's where there is
 * none. It is read only when an attempt ends by SIGKILL: nothing per successful attempt.
 *
 * Each kill the counter gained is put to one SIGKILLed attempt (or worker holding none), so
 * several victims of one squeeze are each found. A kill nobody claims (a process of the cgroup
 * that is not ours) would go to the next SIGKILL; `forgetOld` drops those a look later.
 */
import { readFileSync } from 'node:fs';

const COUNTER = /^oom_kill (\d+)$/m;

/** Where this process's OOM kills are counted: its memory cgroup's file, else the machine's. */
export function oomCounterFile(procCgroup = '/proc/self/cgroup', root = '/sys/fs/cgroup'): string {
  let lines: string[] = [];
  try {
    lines = readFileSync(procCgroup, 'latin1').split('\n');
  } catch {
    // no /proc/self/cgroup: the machine's count
  }
  const candidates: string[] = [];
  for (const line of lines) {
    const [, controllers, path] = /^\d+:([^:]*):(.*)$/.exec(line) ?? [];
    if (path === undefined) continue;
    if (controllers === '') candidates.push(`${root}${path}/memory.events`, `${root}/unified${path}/memory.events`);
    else if (controllers!.split(',').includes('memory')) candidates.push(`${root}/memory${path}/memory.oom_control`);
  }
  return candidates.find((f) => readCount(f) !== null) ?? '/proc/vmstat';
}

function readCount(file: string): number | null {
  try {
    const m = COUNTER.exec(readFileSync(file, 'latin1'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

export class OomKills {
  private readonly file: string;
  /** The count up to which every kill is put to a process already (null: no counter here). */
  private claimed: number | null;
  /** The count at the last `forgetOld`. */
  private looked: number | null;

  constructor(file = oomCounterFile()) {
    this.file = file;
    this.claimed = this.looked = readCount(file);
  }

  /** A process of this run died by SIGKILL: whether the OOM killer did it (a kill of the counter no other took). */
  claim(): boolean {
    const now = readCount(this.file);
    if (now === null || this.claimed === null || now <= this.claimed) return false;
    this.claimed++;
    return true;
  }

  /**
   * Kills counted before the last look and still unclaimed were not of this run's attempts
   * (their SIGKILL would have been seen by now): forgotten. Called every few seconds.
   */
  forgetOld(): void {
    if (this.claimed === null) return;
    if (this.looked !== null && this.looked > this.claimed) this.claimed = this.looked;
    this.looked = readCount(this.file);
  }
}
