import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { failpoint } from '../failpoint.js';
import { CONNECT_TIMEOUT_MS, IDLE_IN_TRANSACTION_MS, LOCK_TIMEOUT_MS, LONG_QUERY_TIMEOUT_MS, QUERY_TIMEOUT_MS, isBroken, isRetryable, pgStoreError } from './pg-errors.js';
import type { PgTarget } from './pg-target.js';

/** A named statement: prepared once per pooled connection, on first use. */
export interface Statement {
  name: string;
  text: string;
}

/** What a verb runs its SQL through: one pooled client, or the pool for single reads. */
export interface Sql {
  rows<T>(st: Statement | string, values?: unknown[]): Promise<T[]>;
  /** Rows changed (or returned). */
  run(st: Statement | string, values?: unknown[]): Promise<number>;
}

/** Transactions that deadlock or fail serialization run again, up to this many times in all. */
const MAX_TRIES = 5;

/** BIGINT (ids, times, counts) as JS numbers: every value the store holds is below 2^53. */
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === pg.types.builtins.INT8 ? Number : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

/**
 * How long `close` waits for the calls still running (a progress line's counts, a heartbeat)
 * before it cuts their connections. On a healthy server the slowest of them, counts at a
 * million tasks, takes 120-145 ms (measured); past a second they wait on a silent network, and
 * would hold the process up to their own bound (30 s) after the run gave up.
 */
const CLOSE_GRACE_MS = 1000;

/** `long`: the statements may rightly run for long (see LONG_QUERY_TIMEOUT_MS). */
export interface Patience {
  long?: boolean;
}

function over(client: pg.PoolClient, { long = false }: Patience): Sql {
  const query_timeout = long ? LONG_QUERY_TIMEOUT_MS : QUERY_TIMEOUT_MS;
  const config = (st: Statement | string, values: unknown[] | undefined) =>
    typeof st === 'string' ? { text: st, values, query_timeout } : { name: st.name, text: st.text, values, query_timeout };
  return {
    async rows<T>(st: Statement | string, values?: unknown[]) {
      return (await client.query(config(st, values))).rows as T[];
    },
    async run(st: Statement | string, values?: unknown[]) {
      return (await client.query(config(st, values))).rowCount ?? 0;
    },
  };
}

/**
 * The connection pool of one PostgresStore. Every error leaving it is mapped to a
 * StoreError naming the server (see pg-errors.ts); every multi-statement verb runs in
 * `transaction`, on one client.
 */
export class PgDb {
  private readonly pool: pg.Pool;
  private closed = false;
  /** Every client the pool made that has not ended: idle, in use or still connecting. */
  private readonly clients = new Set<pg.Client>();

  constructor(
    readonly target: PgTarget,
    private readonly readonly: boolean,
  ) {
    const clients = this.clients;
    this.pool = new pg.Pool({
      Client: class extends pg.Client {
        constructor(config?: pg.ClientConfig) {
          super(config);
          clients.add(this);
          this.once('end', () => clients.delete(this));
          // The pool takes its own listener off a connection as it hands it over, and the caller
          // adds one only once its await resumes. The server's "terminating connection" can come
          // in the same read as the end of start-up, so the driver emits it in between: with no
          // listener, that was thrown from the socket's handler (exit 70, not an outage). The
          // driver has marked the connection unusable by then; its next statement fails as a
          // lost connection, which session() maps and never reuses.
          this.on('error', () => {});
        }
      },
      // Read-only stores: the server itself refuses any write, whatever the code path.
      ...(readonly ? { options: '-c default_transaction_read_only=on' } : {}),
      connectionString: target.connectionString,
      types,
      max: 4,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      // Longer than an idle coordinator's longest wait between looks (10 s, idle-poll.ts): its
      // looks reuse a session instead of opening one each time (a backend started and every
      // statement prepared again: about 2.5 ms of the server's CPU a look, measured at 64 hosts).
      idleTimeoutMillis: 30_000,
      // Probes after 10 s of silence on an idle connection (the OS default is 2 h), so a
      // partition is noticed on connections waiting in the pool too.
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      lock_timeout: LOCK_TIMEOUT_MS,
      idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_MS,
      application_name: 'splitdance',
    });
    // An idle connection the server dropped: the pool discards it and opens another on demand.
    this.pool.on('error', () => {});
  }

  /** Statements outside any transaction, on one pooled client. */
  async read<T>(fn: (sql: Sql) => Promise<T>, patience: Patience = {}): Promise<T> {
    return this.session((sql) => fn(sql), patience);
  }

  /**
   * Holds one client for a session (temp tables live on one connection). A client whose
   * connection broke, or whose statement went unanswered, is destroyed, never reused.
   */
  async session<T>(fn: (sql: Sql, tx: <R>(body: (sql: Sql) => Promise<R>) => Promise<R>) => Promise<T>, patience: Patience = {}): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw pgStoreError(err, this.target, this.readonly);
    }
    // A checked-out client has no pool listener: without this, a connection that drops
    // between statements (say, during a long directory walk) would crash the process.
    let broken: Error | undefined;
    const onError = (err: Error) => (broken ??= err);
    client.on('error', onError);
    try {
      return await fn(over(client, patience), (body) => this.inTransaction(client, body, patience));
    } catch (err) {
      if (isBroken(err)) broken ??= err as Error;
      throw pgStoreError(broken ?? err, this.target, this.readonly);
    } finally {
      client.removeListener('error', onError);
      client.release(broken);
    }
  }

  /**
   * One statement that commits on its own: no BEGIN and no COMMIT, so one round trip where a
   * transaction takes three or more. `body` writes with that one statement (reads before it
   * would see another snapshot). Rerun after a deadlock or serialization failure, like `transaction`.
   */
  async autocommit<T>(body: (sql: Sql) => Promise<T>, patience: Patience = {}): Promise<T> {
    return this.session(async (sql) => {
      for (let tries = 1; ; tries++) {
        try {
          const result = await body(sql);
          failpoint('write');
          return result;
        } catch (err) {
          if (isBroken(err) || !isRetryable(err) || tries >= MAX_TRIES) throw err;
        }
        await sleep(5 * tries + Math.random() * 20);
      }
    }, patience);
  }

  /** BEGIN … COMMIT on one client; rerun whole after a deadlock or serialization failure. */
  async transaction<T>(body: (sql: Sql) => Promise<T>, patience: Patience = {}): Promise<T> {
    return this.session((_, tx) => tx(body), patience);
  }

  private async inTransaction<T>(client: pg.PoolClient, body: (sql: Sql) => Promise<T>, patience: Patience): Promise<T> {
    const sql = over(client, patience);
    for (let tries = 1; ; tries++) {
      await sql.run('BEGIN');
      try {
        const result = await body(sql);
        await sql.run('COMMIT');
        failpoint('write');
        return result;
      } catch (err) {
        if (!isBroken(err)) await sql.run('ROLLBACK');
        if (!isRetryable(err) || tries >= MAX_TRIES) throw err;
      }
      // Let the other transaction of the deadlock finish first; jitter so both do not collide again.
      await sleep(5 * tries + Math.random() * 20);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const ended = this.pool.end();
    const cut = setTimeout(() => {
      for (const client of this.clients) client.connection.stream.destroy();
    }, CLOSE_GRACE_MS);
    try {
      await ended;
    } finally {
      clearTimeout(cut);
    }
  }
}
