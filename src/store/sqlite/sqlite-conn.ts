import type Database from 'better-sqlite3';
import { failpoint } from '../failpoint.js';
import { readIdentity, storeError } from './open-sqlite.js';
import { prepareStatements, type Statements } from './statements.js';

/**
 * One open SQLite store: its connection, prepared statements, and the two ways every verb
 * module touches it (`write`, `read`). better-sqlite3 is synchronous; every write is one
 * short `BEGIN IMMEDIATE` transaction, so a writer waits for the lock up front
 * (busy_timeout) instead of failing half-way.
 */
export class SqliteConn {
  readonly st: Statements;
  readonly identity: string;
  /** Made once: wrapping a function anew for every write cost ≈ 5 µs per tick. */
  private readonly transaction: Database.Transaction<(fn: () => unknown) => unknown>;
  /** Where this connection keeps temporary data now (see write). */
  private temp: 'FILE' | 'MEMORY' = 'FILE';

  constructor(
    readonly location: string,
    readonly db: Database.Database,
    readonly readonly: boolean,
  ) {
    this.identity = readIdentity(db);
    this.st = prepareStatements(db);
    this.transaction = db.transaction((fn: () => unknown) => fn());
  }

  /**
   * Runs `fn` in a BEGIN IMMEDIATE transaction, mapping driver errors to StoreError.
   *
   * Its statement journals (each statement's undo log inside the transaction) stay in memory:
   * past 64 KB SQLite moves one to a file in the temporary folder, and with that folder full
   * the commit failed as "disk full". Every write statement changes a bounded set of rows (a
   * tick's group, a chunk), so the memory is bounded too. Outside writes the connection keeps
   * temporary files, so a read sorting a million rows never holds them in memory. (Switching
   * costs ≈ 2 µs: the connection never opens a temporary database, which would pin it.)
   */
  write<T>(fn: () => T): T {
    try {
      this.tempStore('MEMORY');
      const result = this.transaction.immediate(fn) as T;
      failpoint('write');
      return result;
    } catch (err) {
      throw storeError(err, this.location);
    } finally {
      this.tempStore('FILE');
    }
  }

  read<T>(fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      throw storeError(err, this.location);
    }
  }

  /** Runs `fn` with temporary files allowed: sorting a batch may need them, even inside a write. */
  withTempFiles<T>(fn: () => T): T {
    const was = this.temp;
    this.tempStore('FILE');
    try {
      return fn();
    } finally {
      this.tempStore(was);
    }
  }

  private tempStore(where: 'FILE' | 'MEMORY'): void {
    if (this.temp === where) return;
    (where === 'MEMORY' ? this.st.tempInMemory : this.st.tempInFiles).run();
    this.temp = where;
  }
}
