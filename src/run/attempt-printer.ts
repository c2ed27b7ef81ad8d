import { mkdtempSync, rmSync } from 'node:fs';
import { open, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ClaimedTask, Settlement, TaskStatus } from '../store/task-store.js';
import type { RunObserver } from '../coordinator/run-types.js';

/** Where `--print` writes one stream of one attempt: its bytes in order, then its end. Each resolves once written (or dropped). */
export interface PrintedStream {
  write(chunk: Buffer): Promise<void>;
  end(): Promise<void>;
}

/** What `--print` hands the reporter for one attempt: a writer for its stdout or its stderr. */
export type PrintAttempt = (task: ClaimedTask, stream: 'out' | 'err') => PrintedStream;

/** How much of a copy is read and written at a time: an output of any size is printed in bounded memory. */
export const PRINT_CHUNK_BYTES = 1024 * 1024;

/**
 * `--print`: each attempt's workers write a copy of its stdout and stderr apart into a
 * private folder (0700, one per run, in TMPDIR, print-copy.ts); when the attempt ends this
 * copies both to the reporter, chunk by chunk and one attempt after another, so two attempts'
 * lines never mix and an output of any size (above Node's 2 GiB buffer limit too) is printed
 * whole. With `keepOrder` an attempt waits until every attempt handed out before it has been
 * printed (GNU parallel's -k: for a new batch, task order). Each copy goes once printed; the
 * folder and whatever is left in it go when the run ends, or when the process exits.
 */
export class AttemptPrinter {
  readonly dir: string;
  /** Attempts handed out, by token, until printed (keepOrder only). */
  private readonly order: ClaimedTask[] = [];
  private readonly ended = new Set<number>();
  /** The attempts being printed, one after another: the last in line. */
  private printing: Promise<void> = Promise.resolve();
  private finished: Promise<void> | null = null;
  /** Attempts whose copy could not be read back: their output is missing from the run's output. */
  private lostCount = 0;
  /** An exit before finish (a bug, process.exit) still removes the folder. */
  private readonly onExit = () => this.removeDir();

  constructor(
    private readonly keepOrder: boolean,
    private readonly print: PrintAttempt,
    /** Told when an attempt's copy could not be printed. */
    private readonly note: (m: string) => void = () => {},
    /** The copies' folder when another owns it (--results'), else one of its own in TMPDIR. */
    private readonly shared: string | null = null,
  ) {
    this.dir = shared ?? mkdtempSync(join(tmpdir(), 'splitdance-print-'));
    process.on('exit', this.onExit);
  }

  /** How many attempts' output could not be printed (their copy could not be read). */
  get lost(): number {
    return this.lostCount;
  }

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

  /**
   * The run is over: what still waits (held back by an attempt that never reported) is printed
   * in order, everything is written, and the folder goes with whatever is left in it (a copy of
   * an attempt whose worker was killed). The same promise on every call.
   */
  finish(): Promise<void> {
    this.finished ??= (async () => {
      for (const task of this.order.splice(0)) this.emit(task);
      await this.printing;
      this.removeDir();
      process.off('exit', this.onExit);
    })();
    return this.finished;
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
    this.printing = this.printing.then(async () => {
      for (const stream of ['out', 'err'] as const) {
        try {
          await copyOut(`${prefix}.${stream}`, PRINT_CHUNK_BYTES, () => this.print(task, stream));
        } catch (err) {
          this.lostCount++;
          this.note(`--print: the std${stream} of attempt ${task.attempt} of ${task.key} could not be printed: ${(err as Error).message}`);
        }
      }
    });
  }

  private removeDir(): void {
    if (this.shared !== null) return; // its owner removes it
    try {
      rmSync(this.dir, { recursive: true, force: true });
    } catch {
      // a private folder in TMPDIR; nothing else points at it
    }
  }
}

/**
 * Copies the file at `path` to the stream `open` gives, `chunk` bytes at a time, never holding
 * more; then the file goes, whatever happened. Nothing when there is no file (the attempt
 * printed nothing there), and then the stream is never opened.
 */
export async function copyOut(path: string, chunk: number, openStream: () => PrintedStream): Promise<void> {
  let file;
  try {
    file = await open(path, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  try {
    let out: PrintedStream | null = null;
    for (;;) {
      const buf = Buffer.allocUnsafe(chunk);
      const { bytesRead } = await file.read(buf, 0, chunk, null);
      if (bytesRead === 0) break;
      out ??= openStream();
      await out.write(buf.subarray(0, bytesRead));
    }
    await out?.end();
  } finally {
    await file.close();
    await unlink(path).catch(() => undefined);
  }
}
