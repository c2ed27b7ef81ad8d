import type { CancelResult, TaskRow } from '../records.js';

/**
 * The loop of `cancel` both stores run over the matching tasks: each store updates one task
 * its own way (synchronously in SQLite, awaited in PostgreSQL) and reports the status after
 * the update here; the tally says what `cancel` returns and which items' dependents follow.
 */
export class CancelTally {
  readonly result: CancelResult = { cancelled: 0, stopping: 0, dependents: 0 };
  /** The items of the tasks cancelled, for the stage cascade. */
  readonly items: (string | null)[] = [];

  /** The tasks a cancel can still stop: finished ones keep their outcome. */
  static targets(tasks: TaskRow[]): TaskRow[] {
    return tasks.filter((t) => t.status === 'PENDING' || t.status === 'RUNNING');
  }

  /** Counts one task: `status` after its update, undefined when it ended meanwhile. */
  add(task: TaskRow, status: string | undefined): void {
    if (status === undefined) return;
    if (status === 'RUNNING') this.result.stopping++;
    else this.result.cancelled++;
    this.items.push(task.item);
  }
}
