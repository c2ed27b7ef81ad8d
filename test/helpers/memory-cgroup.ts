import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = '/sys/fs/cgroup';

export interface MemoryCgroup {
  /** Write a pid here to move that process in (what it starts afterwards is in too). */
  procs: string;
  /** The file where the kernel counts OOM kills in it (an `oom_kill N` line). */
  events: string;
  /** The kernel's count of OOM kills in it. */
  oomKills(): number;
  /** Kills what is left in it (only what the test started), then removes it. */
  remove(): Promise<void>;
}

/**
 * A new memory cgroup below this process's own, limited to `bytes`: cgroup v2's memory.max
 * where the memory controller is given to children, else cgroup v1's memory.limit_in_bytes.
 * Null where none can be made (not root, no memory controller, a read-only /sys/fs/cgroup).
 */
export function memoryCgroup(bytes: number): MemoryCgroup | null {
  const lines = readFileSync('/proc/self/cgroup', 'utf8').split('\n');
  const v2 = lines.find((l) => l.startsWith('0::'))?.slice(3);
  const v1 = lines.map((l) => /^\d+:([^:]*):(.*)$/.exec(l)).find((m) => m?.[1]!.split(',').includes('memory'))?.[2];
  const name = `splitdance-test-${process.pid}-${Math.floor(Math.random() * 1e6)}`;
  const tries = [
    ...(v2 !== undefined ? [{ dir: join(ROOT, v2, name), limit: 'memory.max', events: 'memory.events' }] : []),
    ...(v1 !== undefined ? [{ dir: join(ROOT, 'memory', v1, name), limit: 'memory.limit_in_bytes', events: 'memory.oom_control' }] : []),
  ];
  for (const t of tries) {
    try {
      mkdirSync(t.dir);
    } catch {
      continue;
    }
    try {
      if (!existsSync(join(t.dir, t.limit))) throw new Error('no memory controller here');
      writeFileSync(join(t.dir, t.limit), String(bytes));
      const events = join(t.dir, t.events);
      return {
        procs: join(t.dir, 'cgroup.procs'),
        events,
        oomKills: () => Number(/^oom_kill (\d+)$/m.exec(readFileSync(events, 'utf8'))?.[1] ?? NaN),
        remove: async () => {
          const procs = join(t.dir, 'cgroup.procs');
          for (const pid of readFileSync(procs, 'utf8').split('\n').filter(Boolean)) process.kill(Number(pid), 'SIGKILL');
          while (readFileSync(procs, 'utf8').trim() !== '') await new Promise((r) => setTimeout(r, 20));
          rmdirSync(t.dir);
        },
      };
    } catch {
      rmdirSync(t.dir);
    }
  }
  return null;
}
