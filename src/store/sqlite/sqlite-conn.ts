import type Database from 'better-sqlite3';
import { statSync } from 'node:fs';
import { StoreError } from '../../errors.js';
import { failpoint } from '../failpoint.js';
import { readIdentity, storeError } from './open-sqlite.js';
import { prepareStatements, type Statements } from './statements.js';

/** How often a connection looks whether its path still names its file (see checkPlace). */
const PLACE_CHECK_MS = 500;

/** The device and inode at `path`, or null when nothing is there (or it is not a file path, like `:memory:`). */
function fileAt(path: string): { dev: number; ino: number } | null {
  try {
    const st = statSync(path);
    return { dev: st.dev, ino: st.ino };
  } catch {
    return null;
  }
}

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
  /** The file the path named when it was opened (device and inode), and when that was last looked at. */
  private readonly file: { dev: number; ino: number } | null;
  private lookedAt = Date.now();

  constructor(
    readonly location: string,
    readonly db: Database.Database,
    readonly readonly: boolean,
  ) {
    this.identity = readIdentity(db);
    this.st = prepareStatements(db);
    this.transaction = db.transaction((fn: () => unknown) => fn());
    this.file = fileAt(location);
  }

  /**
   * The open connection goes on reading and writing its file wherever it went: moved aside
   * or deleted, the file is no longer the store at the path, and what this process writes is
   * lost to every other (a new run there would start afresh, and run every task again). So the
   * path is looked at again (at most every PLACE_CHECK_MS: a stat per transaction would show in
   * the per-task cost), and a path that no longer names the file ends the process's use of it.
   */
  private checkPlace(): void {
    if (this.file === null) return;
    const now = Date.now();
    if (now - this.lookedAt < PLACE_CHECK_MS) return;
    this.lookedAt = now;
    const there = fileAt(this.location);
    if (there && there.dev === this.file.dev && there.ino === this.file.ino) return;
    const what = there ? 'another file is at its path now' : 'nothing is at its path now';
    throw new StoreError(
      `the store ${this.location} was moved, deleted or replaced while in use (${what}); this process stops using it, since what it wrote there would be lost: put the file back, or run again to use what is at the path`,
    );
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
    this.checkPlace();
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
    this.checkPlace();
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
