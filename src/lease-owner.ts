import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { TEST_HOOKS } from './test-hooks.js';

/**
 * A lease owner names a coordinator process: `host/boot/pidns:pid:start`. `boot` is this
 * boot's id, so two machines that share a hostname (every container called `vm`) are
 * never confused, and an owner from before a reboot is never judged by this boot's pids;
 * `pidns` is the inode of the owner's PID namespace, because two containers on one machine
 * share hostname and boot id but not pids: a pid is only evidence inside its own namespace;
 * `start` is the process's start time in clock ticks since boot, so a reused pid is not
 * mistaken for the owner. Only owners provably in our namespace can be proven dead; others
 * (other hosts, other namespaces, and owners written before the namespace was recorded,
 * `host/boot:pid:start`) are reclaimed when their lease expires.
 */
// A simulated host's identity (SPLITDANCE_HOST_ID), given by the test suite: see test-hooks.ts.
const OVERRIDE = TEST_HOOKS.hostId;
export const HOST = OVERRIDE ?? hostname();
const NAMESPACE = pidNamespace();
const MACHINE = `${OVERRIDE ? `${OVERRIDE}/sim` : `${HOST}/${bootId()}`}/${NAMESPACE ?? 'nons'}`;
/**
 * Whether this process can judge pids of its namespace at all: it knows its namespace, and
 * the /proc it reads is that namespace's (`unshare --pid` without a fresh /proc keeps the
 * parent's, where our pids name other processes).
 */
const JUDGE = NAMESPACE !== null && procIsOurs();

function bootId(): string {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim().slice(0, 8);
  } catch {
    return 'noboot';
  }
}

/** The inode of this process's PID namespace (`pid:[4026531836]`), or null when it cannot be read. */
function pidNamespace(): string | null {
  try {
    return /^pid:\[(\d+)\]$/.exec(readlinkSync('/proc/self/ns/pid'))?.[1] ?? null;
  } catch {
    return null;
  }
}

function procIsOurs(): boolean {
  try {
    return readlinkSync('/proc/self') === String(process.pid);
  } catch {
    return false;
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

function processStartTime(pid: number): string | null {
  return procStat(pid)?.start ?? null;
}

export function ownerId(pid: number = process.pid): string {
  return `${MACHINE}:${pid}:${processStartTime(pid) ?? '?'}`;
}

export interface ParsedOwner {
  /** The host as people know it (the hostname, or SPLITDANCE_HOST_ID). */
  host: string;
  /** Everything before the pid: host, boot and (since it is recorded) PID namespace. */
  machine: string;
  pid: number;
  start: string;
}

export function parseOwner(owner: string): ParsedOwner | null {
  const m = /^(.*):(\d+):([^:]*)$/.exec(owner);
  if (!m) return null;
  const machine = m[1]!;
  // `host/boot/pidns` now, `host/boot` before the namespace was recorded.
  const host = /^(.*)\/[^/]*\/(?:\d+|nons)$/.exec(machine)?.[1] ?? machine.replace(/\/[^/]*$/, '');
  return { host, machine, pid: Number(m[2]), start: m[3]! };
}

/** The owner's pid means something here: same machine, same boot, same PID namespace, and our /proc. */
function inOurNamespace(parsed: ParsedOwner | null): parsed is ParsedOwner {
  return parsed !== null && JUDGE && parsed.machine === MACHINE;
}

/**
 * True when the owner is in our PID namespace on this host and its process still exists,
 * stopped (SIGSTOP, Ctrl-Z) included: its lease is not taken here however long ago it
 * expired (SPEC §5). A stopped process cannot heartbeat, but its workers may still be
 * running its attempts.
 */
export function isLiveLocalOwner(owner: string): boolean {
  return inOurNamespace(parseOwner(owner)) && !isDeadOwner(owner);
}

/**
 * True only when the owner is in our PID namespace on this host and its process is gone:
 * no such pid, a zombie (killed, not yet reaped), or a pid reused by a process that
 * started later. An owner in another namespace can never be proven dead from here.
 */
export function isDeadOwner(owner: string): boolean {
  const parsed = parseOwner(owner);
  if (!inOurNamespace(parsed)) return false;
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
