import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';

/**
 * A lease owner names a coordinator process: `host:pid:start`, where start is the
 * process's start time in clock ticks since boot (from /proc), so a reused pid is not
 * mistaken for the owner. Only owners on this host can be proven dead; others are
 * reclaimed when their lease expires.
 */
export const HOST = hostname();

export function processStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 22; the command name (field 2) may hold spaces and parentheses, so count from the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

export function ownerId(pid: number = process.pid): string {
  return `${HOST}:${pid}:${processStartTime(pid) ?? '?'}`;
}

export function parseOwner(owner: string): { host: string; pid: number; start: string } | null {
  const m = /^(.*):(\d+):([^:]*)$/.exec(owner);
  return m ? { host: m[1]!, pid: Number(m[2]), start: m[3]! } : null;
}

/** True only when the owner is on this host and its process is gone (or its pid was reused). */
export function isDeadOwner(owner: string): boolean {
  const parsed = parseOwner(owner);
  if (!parsed || parsed.host !== HOST) return false;
  try {
    process.kill(parsed.pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
  if (parsed.start === '?') return false;
  const start = processStartTime(parsed.pid);
  return start !== null && start !== parsed.start;
}
