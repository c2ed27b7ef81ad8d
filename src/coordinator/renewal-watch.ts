/** Whether an owner that cannot be proven dead still renews its leases, judged on this process's monotonic clock. */
import type { RunningOwner } from '../store/task-store.js';
import { monotonicMs } from '../wall-steps.js';

/**
 * A lease end compared with a wall clock cannot tell a dead owner from a clock that stepped:
 * +1 h on the clock leases are measured on (the machine's for SQLite, the server's for
 * PostgreSQL) makes every live owner's lease look an hour past its end until its next
 * heartbeat. So an expired lease is not enough to take a remote owner's tasks: its renewals
 * must also be seen to stop. Each look records, per owner, the latest lease end of its tasks
 * (a heartbeat or a claim moves it) and when, on this process's monotonic clock, that value was
 * first seen; an owner is still renewing while its value changed less than a lease ago.
 *
 * The bound this keeps: a live owner renews every third of its lease, so its value changes
 * at least twice in any lease-long window this looker watches; an owner silent for a whole
 * lease of the looker's own time (frozen, dead, cut off) is released as before, at most a lease
 * after this looker first saw it (a looker started after the owner died waits that lease once).
 * Hosts sharing a batch use its stored lease, so the looker's lease is the owner's.
 */
export class RenewalWatch {
  private seen = new Map<string, { leaseEnd: number; since: number }>();

  constructor(
    private readonly leaseMs: number,
    private readonly clock: () => number = monotonicMs,
  ) {}

  /** Records this look's owners; returns those whose lease end changed less than a lease ago (or was first seen then). */
  renewing(owners: readonly RunningOwner[]): string[] {
    const at = this.clock();
    const next = new Map<string, { leaseEnd: number; since: number }>();
    const renewing: string[] = [];
    for (const { owner, leaseEnd } of owners) {
      const before = this.seen.get(owner);
      const entry = before?.leaseEnd === leaseEnd ? before : { leaseEnd, since: at };
      next.set(owner, entry);
      if (at - entry.since < this.leaseMs) renewing.push(owner);
    }
    this.seen = next; // owners that no longer hold tasks are forgotten
    return renewing;
  }
}
