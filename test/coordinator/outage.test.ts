import { describe, expect, it } from 'vitest';
import { Outage, isUnavailable } from '../../src/coordinator/outage.js';
import { StoreError } from '../../src/errors.js';
import { CONNECT_TIMEOUT_MS, pgStoreError } from '../../src/store/postgres/pg-errors.js';
import { parsePgUrl } from '../../src/store/postgres/pg-target.js';

const t = parsePgUrl('postgres://u:pw@h:1/db');
const pgErr = (message: string, code?: string) => pgStoreError(Object.assign(new Error(message), code ? { code } : {}), t);

describe('which PostgreSQL errors a run waits out', () => {
  it('a restart, a crash, a refused or cut connection, a primary being demoted: unavailable', () => {
    for (const e of [
      pgErr('the database system is shutting down', '57P03'),
      pgErr('cannot execute UPDATE in a read-only transaction', '25006'),
      pgErr('the database system is starting up', '57P03'),
      pgErr('terminating connection due to administrator command', '57P01'),
      pgErr('connect ECONNREFUSED 127.0.0.1:1', 'ECONNREFUSED'),
      pgErr('Connection terminated unexpectedly'),
      pgErr('server closed the connection', '08006'),
      pgErr('terminating connection due to idle-in-transaction timeout', '25P03'),
      pgErr('Query read timeout'),
      pgErr('timeout exceeded when trying to connect'),
    ]) {
      expect(isUnavailable(e), e.message).toBe(true);
    }
  });

  it('a lock timeout, a refused login, a full disk, a missing table, a bug: not', () => {
    for (const e of [pgErr('lock timeout', '55P03'), pgErr('auth', '28P01'), pgErr('disk', '53100'), pgErr('no table', '42P01'), pgErr('bug', 'XX000'), pgErr('dropped', '57P04')]) {
      expect(isUnavailable(e), e.message).toBe(false);
    }
  });
});

describe('Outage', () => {
  const down = new StoreError('cannot reach PostgreSQL at h:1: connect ECONNREFUSED; check --db and that the server is running', 'UNAVAILABLE');

  it('backs off within the limit, says when it starts and ends once each, then gives up naming the outage', () => {
    const notes: string[] = [];
    const o = new Outage((m) => notes.push(m), 5000);
    const delays = [0, 100, 400, 1500, 3000, 4900].map((at) => o.failed(down, 1000 + at));
    expect(delays.every((d) => d > 0 && d <= 2400)).toBe(true);
    expect(delays.at(-1)).toBeLessThanOrEqual(100); // never waits past the limit
    expect(notes).toEqual([expect.stringMatching(/^the store is unavailable \(cannot reach PostgreSQL at h:1: connect ECONNREFUSED\); .*up to 5s/)]);
    expect(() => o.failed(down, 6000)).toThrow(/stayed unavailable for 5s .*cannot reach PostgreSQL at h:1/);
  });

  it('a store found silent (a statement unanswered) counts as unavailable from when the statement was sent', () => {
    const o = new Outage(() => {}, 5000);
    const silent = new StoreError('lost the connection to PostgreSQL at h:1 (no answer for 2000 ms)', 'UNAVAILABLE', 2000);
    expect(o.failed(silent, 10_000)).toBeGreaterThan(0);
    expect(o.failed(down, 12_900)).toBeLessThanOrEqual(100);
    expect(() => o.failed(down, 13_000)).toThrow(/stayed unavailable for 5s \(limit 5s\)/);
  });

  it('a connection attempt that timed out counts as unavailable from when it began', () => {
    const timedOut = pgErr('Connection terminated due to connection timeout');
    expect(isUnavailable(timedOut)).toBe(true);
    expect((timedOut as StoreError).silentMs).toBe(CONNECT_TIMEOUT_MS);
    const o = new Outage(() => {}, CONNECT_TIMEOUT_MS + 5000);
    expect(o.failed(timedOut, 100_000)).toBeGreaterThan(0);
    expect(o.failed(down, 104_900)).toBeLessThanOrEqual(100);
    expect(() => o.failed(down, 105_000)).toThrow(/stayed unavailable for/);
  });

  it('gives up at the limit while a retry still waits for its answer, not when that retry fails', async () => {
    const o = new Outage(() => {}, 300);
    const retried: number[] = [];
    const gaveUp = new Promise<StoreError>((done) => o.retryLater(down, () => retried.push(1), done));
    // The retry runs and never comes back (a connection attempt across a silent network).
    const err = await gaveUp;
    expect(retried).toEqual([1]);
    expect(err.message).toMatch(/^the store stayed unavailable for .* \(limit 300ms\): cannot reach PostgreSQL at h:1/);
    o.cancel();
  });

  it('a recovery starts the clock again; any other error is thrown as it is', () => {
    const notes: string[] = [];
    const o = new Outage((m) => notes.push(m), 5000);
    o.failed(down, 0);
    expect(o.recovered(4000)).toBe(true);
    expect(o.recovered(4001)).toBe(false);
    expect(o.failed(down, 8000)).toBeGreaterThan(0);
    expect(notes).toHaveLength(3);
    const bug = new Error('bug');
    expect(() => o.failed(bug)).toThrow(bug);
    const locked = new StoreError('locked');
    expect(() => o.failed(locked)).toThrow(locked);
  });
});
