import type { ClaimRequest, Settlement } from '../task-store.js';
import type { PgDb } from './pg-db.js';

/**
 * The one clock of a PostgreSQL store: the server's. Every time the store writes, whether a
 * caller passed it in (claims, leases, settlements, backoff) or the store reads it itself
 * (enqueue, cancel, pause, retry, job updates), is this process's clock moved by an offset to
 * the server's clock measured when the store opened; `fromServer` moves a stored time back.
 * So leases, backoff and history mean the same on every machine however their clocks differ.
 * With `clock: 'caller'` (the contract tests) the offset stays 0 and times are stored as given.
 */
export class ServerClock {
  /** Server clock minus this process's clock, in ms. */
  private offset = 0;

  /** Measures the offset, taking the middle of the round trip as the moment the server read its clock. */
  async measure(db: PgDb): Promise<void> {
    const before = Date.now();
    const [row] = await db.read((sql) => sql.rows<{ now: string | number }>('SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now'));
    const after = Date.now();
    this.offset = Math.round(Number(row!.now) - (before + after) / 2);
  }

  /** Now, on the server's clock. */
  now(): number {
    return Date.now() + this.offset;
  }

  /** A time of this process's clock on the server's. */
  toServer(ms: number): number;
  toServer(ms: number | null): number | null;
  toServer(ms: number | null): number | null {
    return ms === null ? null : ms + this.offset;
  }

  /** A stored time on this process's clock. */
  fromServer(ms: number): number {
    return ms - this.offset;
  }

  claim(req: ClaimRequest): ClaimRequest {
    return { ...req, now: this.toServer(req.now), started: req.started?.map((s) => ({ ...s, at: this.toServer(s.at) })) };
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
