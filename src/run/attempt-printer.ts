import { mkdtempSync, readFileSync, rmdirSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ClaimedTask, Settlement, TaskStatus } from '../store/task-store.js';
import type { RunObserver } from '../coordinator/run-types.js';

/** What `--print` hands the reporter for one attempt: its stdout and stderr, each whole (null: it printed nothing there). */
export type PrintAttempt = (task: ClaimedTask, stdout: Buffer | null, stderr: Buffer | null) => void;

/**
 * `--print`: each attempt's workers write a copy of its stdout and stderr apart into a
 * private folder (0700, one per run, print-copy.ts); when the attempt ends this reads both
 * and hands them on whole, so two attempts' lines never mix. With `keepOrder` an attempt
 * waits until every attempt handed out before it has been printed (GNU parallel's -k: for a
 * new batch, task order). The folder and what is left in it go when the run ends.
 */
export class AttemptPrinter {
  readonly dir = mkdtempSync(join(tmpdir(), 'splitdance-print-'));
  /** Attempts handed out, by token, until printed (keepOrder only). */
  private readonly order: ClaimedTask[] = [];
  private readonly ended = new Set<number>();

  constructor(
    private readonly keepOrder: boolean,
    private readonly print: PrintAttempt,
  ) {}

  /** Where a worker writes the attempt's copies (`.out`, `.err`). */
  prefixOf(token: number): string {
    return join(this.dir, String(token));
  }

  /** The observer `observer` with printing added: attempts are printed when they end, after it heard of them. */
  tap(observer: RunObserver): RunObserver {
    return {
      attemptStarted: (task) => {
        if (this.keepOrder) this.handedOut(task);
        observer.attemptStarted?.(task);
      },
      attemptEnded: (task: ClaimedTask, settlement: Settlement, status: TaskStatus) => {
        observer.attemptEnded(task, settlement, status);
        this.attemptEnded(task);
      },
      released: (tasks) => observer.released(tasks),
      note: (m) => observer.note(m),
    };
  }

  /** The run is over: what still waits (held back by an attempt that never reported) is printed in order, and the folder goes. */
  finish(): void {
    for (const task of this.order.splice(0)) this.emit(task);
    try {
      rmdirSync(this.dir);
    } catch {
      // a worker killed mid-attempt may have left a copy; it is in a private temporary folder
    }
  }

  /**
   * Kept in token order, which is claim order (a claim numbers its tasks in the order it takes
   * them); workers are handed their share of one claim one after another, so out of it.
   */
  private handedOut(task: ClaimedTask): void {
    let i = this.order.length;
    while (i > 0 && this.order[i - 1]!.token > task.token) i--;
    this.order.splice(i, 0, task);
  }

  private attemptEnded(task: ClaimedTask): void {
    if (!this.keepOrder || !this.order.some((t) => t.token === task.token)) return this.emit(task);
    this.ended.add(task.token);
    while (this.order.length && this.ended.has(this.order[0]!.token)) {
      const head = this.order.shift()!;
      this.ended.delete(head.token);
      this.emit(head);
    }
  }

  private emit(task: ClaimedTask): void {
    const prefix = this.prefixOf(task.token);
    this.print(task, take(`${prefix}.out`), take(`${prefix}.err`));
  }
}

/** A copy's bytes, and the file gone; null when the attempt printed nothing there. */
function take(path: string): Buffer | null {
  try {
    const bytes = readFileSync(path);
    unlinkSync(path);
    return bytes.length ? bytes : null;
  } catch {
    return null;
  }
}
