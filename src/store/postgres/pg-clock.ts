import { WallSteps } from '../../wall-steps.js';
import type { ClaimRequest, Settlement } from '../records.js';
import type { PgDb } from './pg-db.js';

/** The server's clock in SQL, in ms since the epoch: what every lease is measured on. */
export const SERVER_NOW = '(extract(epoch FROM clock_timestamp()) * 1000)::bigint';


/**
 * The one clock of a PostgreSQL store: the server's. Leases are measured on it in SQL
 * (SERVER_NOW): a claim's and a heartbeat's expiry, and recovery's test of it, never read this
 * machine's clock, so a machine whose clock steps back can never make its own live leases look
 * expired to another. Every other time the store writes, whether a caller passed it in
 * (settlements, backoff) or the store reads it itself (enqueue, cancel, pause, retry, job
 * updates), is this process's clock moved by an offset to the server's clock, measured when the
 * store opened and moved again whenever this process's wall clock steps (seen against its
 * monotonic clock); `fromServer` moves a stored time back. So leases, backoff and history mean
 * the same on every machine however their clocks differ or jump.
 * With `clock: 'caller'` (the contract tests) the offset stays 0 and every time, leases
 * included, is the caller's, stored as given, but for a --rate-key claim's, which is never
 * earlier than this process's clock once it holds the batch's gate (pg-lease.ts).
 */
export class ServerClock {
  /** Server clock minus this process's clock, in ms. */
  private offset = 0;
  /** Steps of this process's wall clock since the offset was set; null: the caller's clock (no server). */
  private steps: WallSteps | null = null;

  /** Measures the offset, taking the middle of the round trip as the moment the server read its clock. */
  async measure(db: PgDb): Promise<void> {
    const before = Date.now();
    const [row] = await db.read((sql) => sql.rows<{ now: string | number }>(`SELECT ${SERVER_NOW} AS now`));
    const after = Date.now();
    this.offset = Math.round(Number(row!.now) - (before + after) / 2);
    this.steps = new WallSteps();
  }

  /** Re-bases the offset when this process's wall clock stepped since it was set: the server's did not. */
  private rebaseOnWallSteps(): void {
    if (this.steps) this.offset -= this.steps.take();
  }

  /** Now, on the server's clock. */
  now(): number {
    this.rebaseOnWallSteps();
    return Date.now() + this.offset;
  }

  /** A time of this process's clock on the server's. */
  toServer(ms: number): number;
  toServer(ms: number | null): number | null;
  toServer(ms: number | null): number | null {
    this.rebaseOnWallSteps();
    return ms === null ? null : ms + this.offset;
  }

  /** A stored time on this process's clock. */
  fromServer(ms: number): number {
    this.rebaseOnWallSteps();
    return ms - this.offset;
  }

  /** What a lease is measured from: null for the server's own clock (SERVER_NOW), else the caller's `ms`. */
  leaseBase(ms: number): number | null {
    return this.steps === null ? ms : null;
  }

  claim(req: ClaimRequest): ClaimRequest & { leaseFrom: number | null } {
    return {
      ...req,
      now: this.toServer(req.now),
      started: req.started?.map((s) => ({ ...s, at: this.toServer(s.at) })),
      leaseFrom: this.leaseBase(req.now),
    };
  }

  settlements(settlements: Settlement[]): Settlement[] {
    return settlements.map((x) => ({
      ...x,
      endedAt: this.toServer(x.endedAt),
      retryAt: x.retryAt === undefined ? undefined : this.toServer(x.retryAt),
      startedAt: x.startedAt === undefined ? undefined : this.toServer(x.startedAt),
    }));
  }
}
