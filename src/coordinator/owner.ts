import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';

/**
 * A lease owner names a coordinator process: `host/boot:pid:start`. `boot` is this
 * boot's id, so two machines that share a hostname (every container called `vm`) are
 * never confused, and an owner from before a reboot is seen as dead; `start` is the
 * process's start time in clock ticks since boot, so a reused pid is not mistaken for
 * the owner. Only owners on this machine can be proven dead; others are reclaimed when
 * their lease expires.
 */
// SPLITDANCE_HOST_ID is for tests only: it gives a process another machine's identity, so
// one machine can simulate several hosts sharing a PostgreSQL store.
const OVERRIDE = process.env.SPLITDANCE_HOST_ID;
export const HOST = OVERRIDE ?? hostname();
const MACHINE = OVERRIDE ? `${OVERRIDE}/sim` : `${HOST}/${bootId()}`;

function bootId(): string {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim().slice(0, 8);
  } catch {
    return 'noboot';
  }
}

/** State and start time of a process from /proc, or null when it does not exist (or /proc is absent). */
function procStat(pid: number): { state: string; start: string } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses, so count from the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0] ?? '?', start: fields[19] ?? '?' };
  } catch {
    return null;
  }
}

export function processStartTime(pid: number): string | null {
  return procStat(pid)?.start ?? null;
}

export function ownerId(pid: number = process.pid): string {
  return `${MACHINE}:${pid}:${processStartTime(pid) ?? '?'}`;
}

export function parseOwner(owner: string): { host: string; pid: number; start: string } | null {
  const m = /^(.*):(\d+):([^:]*)$/.exec(owner);
  return m ? { host: m[1]!, pid: Number(m[2]), start: m[3]! } : null;
}

/**
 * True when the owner is on this host and its process still exists, stopped (SIGSTOP,
 * Ctrl-Z) included: its lease is not taken here however long ago it expired (SPEC §5). A
 * stopped process cannot heartbeat, but its workers may still be running its attempts.
 */
export function isLiveLocalOwner(owner: string): boolean {
  const parsed = parseOwner(owner);
  return parsed !== null && parsed.host === MACHINE && !isDeadOwner(owner);
}

/**
 * True only when the owner is on this host and its process is gone: no such pid, a
 * zombie (killed, not yet reaped), or a pid reused by a process that started later.
 */
export function isDeadOwner(owner: string): boolean {
  const parsed = parseOwner(owner);
  if (!parsed || parsed.host !== MACHINE) return false;
  if (parsed.start !== '?') {
    const stat = procStat(parsed.pid);
    return stat === null || stat.state === 'Z' || stat.start !== parsed.start;
  }
  try {
    process.kill(parsed.pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
