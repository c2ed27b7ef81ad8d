/** A batch_hooks row (both stores) as a HookRecord, and the stable id a hook's run is given. */
import type { HookKind, HookRecord } from '../hook-records.js';

export interface HookDbRow {
  hook: string;
  end_mark: string;
  id: string;
  command: string;
  owner: string;
  runs: number;
  started_at: number | string;
  lease_expires_at: number | string;
  ended_at: number | string | null;
  exit_code: number | null;
  signal: string | null;
  output: string | null;
}

export function toHook(r: HookDbRow, fromStore: (ms: number) => number = (ms) => ms): HookRecord {
  return {
    hook: r.hook as HookKind,
    endMark: r.end_mark,
    id: r.id,
    command: r.command,
    owner: r.owner,
    runs: Number(r.runs),
    startedAt: fromStore(Number(r.started_at)),
    leaseExpiresAt: fromStore(Number(r.lease_expires_at)),
    endedAt: r.ended_at === null ? null : fromStore(Number(r.ended_at)),
    exitCode: r.exit_code,
    signal: r.signal,
    output: r.output,
  };
}

/**
 * The id of the `n`-th end a batch's hook runs for: the store's identity (so two stores' ids
 * never meet), the batch id, the hook and n. The same on every start of that run.
 */
export function hookId(identity: string, batchId: number, hook: HookKind, n: number): string {
  return `${hookIdPrefix(identity)}-${batchId}-${hook}-${n}`;
}

/** hookId's first part (PostgreSQL builds the rest in its statement). */
export function hookIdPrefix(identity: string): string {
  return identity.slice(0, 12);
}

/**
 * What `owner`, starting at `now`, may do with a recorded hook run: `ours` (not ended and its own:
 * a retried take whose first reply was lost), `take` (not ended, and its owner dead, or its lease
 * run out while its owner is not a live process of this host; one frozen by SIGSTOP or Ctrl-Z is
 * not taken over: its command runs on in its own process group, and a second would run beside
 * it), else `held` (ended, or another start runs it).
 */
export function hookHold(r: HookDbRow, owner: string, now: number, judge: OwnerJudge): 'ours' | 'take' | 'held' {
  if (r.ended_at !== null) return 'held';
  if (r.owner === owner) return 'ours';
  return judge.dead(r.owner) || (Number(r.lease_expires_at) < now && !judge.liveHere(r.owner)) ? 'take' : 'held';
}

/** What this host can tell of an owner: dead (provably, on this host), or a live process here. */
export interface OwnerJudge {
  dead(owner: string): boolean;
  liveHere(owner: string): boolean;
}
