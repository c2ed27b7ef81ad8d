import { addAttempt, type AttemptStats } from '../store/attempt-stats.js';
import type { BatchProgress, BatchRecord, ReleasedTask } from '../store/task-store.js';
import { batchMetrics, DURATION_BOUNDS_MS, type MetricsStore } from '../status/batch-metrics.js';
import { writeAtomically } from '../status/metrics-file.js';
import { prometheusText } from '../status/prometheus-text.js';
import { longInterval, type LongTimer } from '../long-timer.js';
import { printable } from '../printable.js';
import type { RunObserver } from '../coordinator/run-types.js';

/**
 * `run --metrics-file`: the batch's metrics, rewritten at the start, every progress interval
 * and at the end. Counting a batch's attempts in the store takes seconds on a million of
 * them (~2 s on SQLite), so they are read once, before the run recovers or settles anything,
 * and the run adds each attempt it settles or finds lost; task counts and the last update are
 * read afresh each time (as `status` does). Attempts other processes end meanwhile show in
 * `splitdance metrics` and in the next run's file.
 */
export class RunMetrics {
  private timer: LongTimer | undefined;
  private writing: Promise<void> | null = null;
  private failing = false;

  private constructor(
    private readonly store: MetricsStore & Pick<BatchProgress, 'findBatch'>,
    private batch: BatchRecord,
    private readonly path: string,
    private readonly attempts: AttemptStats,
    private readonly note: (m: string) => void,
  ) {}

  static async open(store: MetricsStore & Pick<BatchProgress, 'findBatch'>, batch: BatchRecord, path: string, note: (m: string) => void): Promise<RunMetrics> {
    return new RunMetrics(store, batch, path, await store.attemptStats(batch.id, DURATION_BOUNDS_MS), note);
  }

  /** Writes the file now, then every `intervalMs` until finish or stop. */
  async start(intervalMs: number): Promise<void> {
    await this.write();
    this.timer = longInterval(() => {
      if (!this.writing) this.writing = this.write().finally(() => (this.writing = null));
    }, intervalMs).unref();
  }

  /** The coordinator's observer, counting the attempts it reports on the way. */
  tap(observer: RunObserver): RunObserver {
    return {
      attemptStarted: (task) => observer.attemptStarted?.(task),
      attemptEnded: (task, settlement, status, printed) => {
        addAttempt(this.attempts, settlement.outcome, settlement.durationMs);
        observer.attemptEnded(task, settlement, status, printed);
      },
      released: (tasks: ReleasedTask[]) => {
        for (const t of tasks) if (t.token !== null) addAttempt(this.attempts, 'LOST', null);
        observer.released(tasks);
      },
      note: (m) => observer.note(m),
    };
  }

  /** The last write, with the final counts. */
  async finish(): Promise<void> {
    this.stop();
    await this.writing;
    await this.write();
  }

  stop(): void {
    this.timer?.cancel();
  }

  /** A write that fails is said once (and once more when it works again); the run goes on. */
  private async write(): Promise<void> {
    try {
      // The row moves (pause, a new definition): its updated_at is part of the last update.
      const row = await this.store.findBatch(this.batch.name);
      if (row?.id === this.batch.id) this.batch = row;
      const text = await prometheusText([await batchMetrics(this.store, this.batch, this.attempts)]);
      await writeAtomically(this.path, text);
      if (this.failing) this.note(`metrics file ${printable(this.path)} written again`);
      this.failing = false;
    } catch (err) {
      if (!this.failing) this.note(`metrics file ${printable(this.path)} not written: ${printable((err as Error).message)}; the run goes on`);
      this.failing = true;
    }
  }
}
