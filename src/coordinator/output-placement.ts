/** Committed successes' declared outputs on their way into place, and fenced-off attempts' outputs removed. */
import { sep } from 'node:path';
import { discardOutput, placeOutput } from '../output/commit-output.js';
import type { OutputPaths } from '../output/output-path.js';
import type { PendingOutput } from '../store/task-store.js';
import type { Queued } from './commit-queue.js';
import type { RunStore } from './run-types.js';

/**
 * Committed successes' declared outputs on their way into place (SPEC §4): each rename starts
 * once its commit won, runs off the loop, and is confirmed to the store in the next tick
 * (`take`), which lets the stages that need it start. Until confirmed the store keeps the
 * temporary file's path, so a crash in between leaves recovery (`redo`) something to finish.
 */
export class OutputPlacement {
  private readonly running = new Map<string, Promise<void>>();
  private placed: { taskId: number; temp: string }[] = [];
  /** Temporary files whose rename failed and was said so. */
  private readonly noted = new Set<string>();
  /** Temporary files whose last rename here failed with an error (EXDEV, EACCES, EROFS). */
  private readonly failing = new Set<string>();

  constructor(
    private readonly note: (message: string) => void,
    /** A rename ended: the loop has a confirmation to commit (and maybe a stage to start). */
    private readonly wake: () => void,
  ) {}

  /** Whether a committed output's last rename here failed (and nothing has placed it since). */
  get stuck(): boolean {
    return this.failing.size > 0;
  }

  /** Renames running, and confirmations not yet committed: the run is not over while any is left. */
  get size(): number {
    return this.running.size + this.placed.length;
  }

  /**
   * Starts putting a committed success's output in place; `late`: a rename redone after its
   * run (placeOutput). One that fails stays recorded: the run does not end as done (exit 3),
   * `status` lists it, and the next run of the batch, or of any batch declaring that output,
   * tries again (the stages that need it wait meanwhile).
   */
  place(taskId: number, paths: OutputPaths, late = false): void {
    if (this.running.has(paths.temp)) return;
    const done = placeOutput(paths, late).then((failed) => {
      this.running.delete(paths.temp);
      // Neither file here (a folder this host cannot see) is for the host that can: not stuck.
      if (failed && !failed.missing) this.failing.add(paths.temp);
      else this.failing.delete(paths.temp);
      if (failed) {
        // Said once per file: recovery tries again every poll. A file gone from both paths
        // (a folder this host cannot see) is for the host that can.
        if (!(failed.missing && late) && !this.noted.has(paths.temp)) {
          this.noted.add(paths.temp);
          this.note(`${failed.error}; ${pendingSaid(paths.temp)}`);
        }
      } else this.placed.push({ taskId, temp: paths.temp });
      this.wake();
    });
    this.running.set(paths.temp, done);
  }

  /**
   * Recovery: committed successes whose rename was never confirmed (a crash after the commit,
   * here or on another host). A temporary file still there is renamed; one gone with a file at
   * the output path was renamed already; neither (a folder this host cannot see) stays recorded.
   */
  redo(pending: PendingOutput[]): void {
    for (const p of pending) if (p.out !== null) this.place(p.taskId, { path: p.out, temp: p.temp }, true);
  }

  /**
   * Declared outputs after their commit: a winner's is renamed into place; a fenced-off
   * attempt's is removed, never renamed — unless the store records it as the success (the
   * reply of a commit that landed was lost, and the retry found its own success). When the
   * store cannot tell (it went down), a fenced-off attempt's file stays and recovery decides.
   */
  async afterCommit(store: RunStore, batchId: number, ended: Queued[], applied: ReadonlyMap<number, unknown>): Promise<void> {
    const fenced = ended.some((q) => q.output && !applied.has(q.settlement.token));
    const pending = fenced ? await store.pendingOutputs(batchId).catch(() => null) : [];
    for (const q of ended) {
      if (!q.output) continue;
      if (applied.has(q.settlement.token)) this.place(q.task.id, q.output);
      else if (pending === null) continue;
      else if (pending.some((p) => p.temp === q.output!.temp)) this.place(q.task.id, q.output);
      else discardOutput(q.output);
    }
  }

  /** Confirms the outputs put in place since the last commit, on their own (nothing else to commit). */
  async confirm(store: RunStore): Promise<void> {
    const placed = this.take();
    if (placed.length === 0) return;
    try {
      await store.outputsPlaced(placed);
    } catch (err) {
      this.restore(placed);
      throw err;
    }
  }

  /** The placements to confirm in the store; given back with `restore` if that fails. */
  take(): { taskId: number; temp: string }[] {
    const out = this.placed;
    this.placed = [];
    return out;
  }

  restore(placed: { taskId: number; temp: string }[]): void {
    this.placed = placed.concat(this.placed);
  }

  /** Every rename started has ended (the run is ending). */
  async settled(): Promise<void> {
    while (this.running.size) await Promise.all(this.running.values());
  }
}

/**
 * Before a run's first claim: other batches' committed outputs whose rename failed (EXDEV,
 * EACCES, EROFS) under the folders this batch writes to are put in place first, so this batch
 * finds them up to date rather than writing them again; each that still cannot be moved is
 * named (`note`), and this batch's own attempt at that path meets the same disk.
 */
export async function placeOthers(store: RunStore, batchId: number, folders: string[], note: (message: string) => void): Promise<void> {
  const under = (path: string) => folders.some((f) => path === f || path.startsWith(f.endsWith(sep) ? f : f + sep));
  const placed: { taskId: number; temp: string }[] = [];
  for (const p of await store.pendingOutputs(null)) {
    if (p.batchId === batchId || p.out === null || !under(p.out)) continue;
    // One at a time, oldest success first: two batches' files for one path are then compared
    // (placeOutput's `late`) after the earlier one's rename, never during it.
    const failed = await placeOutput({ path: p.out, temp: p.temp }, true);
    if (!failed) placed.push({ taskId: p.taskId, temp: p.temp });
    else if (!failed.missing) note(`${failed.error}; ${pendingSaid(p.temp)}`);
  }
  await store.outputsPlaced(placed);
}

function pendingSaid(temp: string): string {
  return `the success stays committed with its output pending at ${temp}, and a run of any batch declaring this output tries again`;
}
