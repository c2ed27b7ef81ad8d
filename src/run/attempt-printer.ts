import { mkdtempSync, rmSync } from 'node:fs';
import { open, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ClaimedTask, Settlement, TaskStatus } from '../store/task-store.js';
import type { PrintedAs, RunObserver } from '../coordinator/run-types.js';
import { LiveCopy } from './live-lines.js';

/** Where `--print` writes one stream of one attempt: its bytes in order, then its end. Each resolves once written (or dropped). */
export interface PrintedStream {
  write(chunk: Buffer): Promise<void>;
  end(): Promise<void>;
}

/** What `--print` hands the reporter for one attempt: a writer for its stdout or its stderr. */
export type PrintAttempt = (task: ClaimedTask, stream: 'out' | 'err') => PrintedStream;

/** How much of a copy is read and written at a time: an output of any size is printed in bounded memory. */
const PRINT_CHUNK_BYTES = 1024 * 1024;

/** How often `--line-buffer` looks for new lines in the copies of running attempts. */
const LIVE_POLL_MS = 50;
/** Reads of one copy per look at most: a flooding attempt does not hold the others back for long. */
const READS_PER_POLL = 16;

/** How `--print` prints: `keepOrder` (-k), `lineBuffer` (lines as they come, not attempts when they end). */
export interface PrintMode {
  keepOrder: boolean;
  lineBuffer: boolean;
}

/** A task in print order (keepOrder): the attempt printed for it now, and whether that one ends it. */
interface Entry {
  task: ClaimedTask;
  /** Its place: the token of its first attempt this run (claim order). */
  seq: number;
  /** `retrying`: its last attempt ended and it will run again; its place waits for that attempt. */
  state: 'running' | 'retrying' | 'final';
  /** An item of a group: the print id of the command whose output it prints, or null for none (PrintedAs). */
  printAs?: string | null;
}

/** `--line-buffer`: the copies of one attempt, read as they grow. */
interface Live {
  task: ClaimedTask;
  copies: LiveCopy[];
  ended: boolean;
}

/**
 * `--print`: each attempt's workers write a copy of its stdout and stderr apart into a
 * private folder (0700, one per run, in TMPDIR, print-copy.ts). When an attempt ends its task
 * (a success, or the failure after which the task is FAILED) this copies both to the reporter,
 * chunk by chunk and one attempt after another, so two attempts' lines never mix and an output
 * of any size (above Node's 2 GiB buffer limit too) is printed whole; the copy of an attempt
 * that will be retried goes unprinted (its log keeps it: `logs KEY --attempt N`). With
 * `keepOrder` a task waits until every task handed out before it has been printed (GNU
 * parallel's -k: for a new batch, task order), through its retries. With `lineBuffer` lines
 * are printed as they come (live-lines.ts), of every attempt, each line whole; with both, as
 * GNU parallel does, the first task's lines as they come, the others' once it is done. Each
 * copy goes once printed; the folder and whatever is left in it go when the run ends, or when
 * the process exits.
 */
export class AttemptPrinter {
  readonly dir: string;
  /** Tasks handed out, in claim order of their first attempt, until printed (keepOrder only). */
  private readonly order: Entry[] = [];
  /** Attempts whose copies are read as they grow, by token (lineBuffer only). */
  private readonly live = new Map<number, Live>();
  /** A copy whose last printed bytes ended inside a line: nothing else is printed until that line's end. */
  private lock: LiveCopy | null = null;
  private poller: NodeJS.Timeout | null = null;
  private polling = false;
  /** The attempts being printed, one after another: the last in line. */
  private printing: Promise<void> = Promise.resolve();
  private finished: Promise<void> | null = null;
  /** Attempts whose copy could not be read back: their output is missing from the run's output. */
  private lostCount = 0;
  /** An exit before finish (a bug, process.exit) still removes the folder. */
  private readonly onExit = () => this.removeDir();

  constructor(
    private readonly mode: PrintMode,
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

  /** Where a worker writes a command's copies (`.out`, `.err`): `id` is its attempt's token, or a group's print id (PrintedAs). */
  prefixOf(id: number | string): string {
    return join(this.dir, String(id));
  }

  /** The observer `observer` with printing added: attempts are printed when they end, after it heard of them. */
  tap(observer: RunObserver): RunObserver {
    return {
      attemptStarted: (task) => {
        this.attemptStarted(task);
        observer.attemptStarted?.(task);
      },
      attemptEnded: (task: ClaimedTask, settlement: Settlement, status: TaskStatus, printed?: PrintedAs) => {
        observer.attemptEnded(task, settlement, status, printed);
        this.attemptEnded(task, status !== 'PENDING', printed);
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
      if (this.poller) clearInterval(this.poller);
      this.poller = null;
      if (this.mode.lineBuffer) {
        this.lock = null;
        for (const l of this.live.values()) l.ended = true;
        this.printing = this.printing.then(() => this.pollOnce(true));
      } else {
        for (const e of this.order.splice(0)) if (e.state !== 'retrying') this.emitEntry(e);
      }
      await this.printing;
      this.removeDir();
      process.off('exit', this.onExit);
    })();
    return this.finished;
  }

  private attemptStarted(task: ClaimedTask): void {
    if (this.mode.keepOrder) this.handedOut(task);
    if (!this.mode.lineBuffer) return;
    const prefix = this.prefixOf(task.token);
    const copy = (stream: 'out' | 'err') => new LiveCopy(`${prefix}.${stream}`, PRINT_CHUNK_BYTES, () => this.print(task, stream));
    this.live.set(task.token, { task, copies: [copy('out'), copy('err')], ended: false });
    this.poller ??= setInterval(() => this.poll(), LIVE_POLL_MS);
  }

  /**
   * Kept in token order, which is claim order (a claim numbers its tasks in the order it takes
   * them); workers are handed their share of one claim one after another, so out of it. A
   * task's next attempt takes the place of its first.
   */
  private handedOut(task: ClaimedTask): void {
    const again = this.order.find((e) => e.task.id === task.id && e.state === 'retrying');
    if (again) {
      again.task = task;
      again.state = 'running';
      delete again.printAs;
      return;
    }
    let i = this.order.length;
    while (i > 0 && this.order[i - 1]!.seq > task.token) i--;
    this.order.splice(i, 0, { task, seq: task.token, state: 'running' });
  }

  private attemptEnded(task: ClaimedTask, final: boolean, printed?: PrintedAs): void {
    const entry = this.mode.keepOrder ? this.order.find((e) => e.task.token === task.token) : undefined;
    if (entry) {
      entry.state = final ? 'final' : 'retrying';
      // An item of a group prints its group's command's output once, as its first item.
      if (printed) entry.printAs = printed.lead ? printed.id : null;
      if (printed?.lead) entry.task = tagged(task, printed);
    }
    if (printed && !this.mode.lineBuffer) return this.groupEnded(task, final, printed, entry);
    if (this.mode.lineBuffer) {
      const l = this.live.get(task.token);
      if (l) l.ended = true;
      this.poll();
      return;
    }
    if (!final) {
      // Not printed: only the attempt that ends its task is (its log keeps this one).
      const prefix = this.prefixOf(task.token);
      this.printing = this.printing.then(() => Promise.all(['out', 'err'].map((s) => unlink(`${prefix}.${s}`).catch(() => undefined))).then(() => undefined));
      return;
    }
    if (!entry) return this.emit(task);
    this.emitReady();
  }

  /**
   * An item of a group (or of a failed group's half) ended: its command's output is printed
   * once, by its first item, when that one ends its task; the other items print nothing.
   */
  private groupEnded(task: ClaimedTask, final: boolean, printed: PrintedAs, entry: Entry | undefined): void {
    if (!printed.lead) {
      if (!entry) return;
    } else if (!final) {
      const prefix = this.prefixOf(printed.id);
      this.printing = this.printing.then(() => Promise.all(['out', 'err'].map((s) => unlink(`${prefix}.${s}`).catch(() => undefined))).then(() => undefined));
      return;
    } else if (!entry) return this.emit(tagged(task, printed), printed.id);
    this.emitReady();
  }

  /** keepOrder: prints the tasks at the head of the order whose attempts ended them. */
  private emitReady(): void {
    while (this.order.length && this.order[0]!.state === 'final') this.emitEntry(this.order.shift()!);
  }

  private emitEntry(e: Entry): void {
    if (e.printAs !== null) this.emit(e.task, e.printAs);
  }

  /** `--line-buffer`: a look at the copies, after whatever is being printed; one at a time. */
  private poll(): void {
    if (this.polling || this.finished) return;
    this.polling = true;
    this.printing = this.printing.then(() => this.pollOnce(false)).finally(() => (this.polling = false));
  }

  /**
   * Prints what the copies that may print now hold: every running attempt's (with keepOrder,
   * the first task's only), or only the one inside a long line; an ended attempt's whole rest.
   * `all`: the run is over, every attempt is ended and printed, in order.
   */
  private async pollOnce(all: boolean): Promise<void> {
    for (;;) {
      const head = this.order[0];
      const candidates = this.mode.keepOrder ? (head ? [this.live.get(head.task.token)].filter((l) => l !== undefined) : []) : [...this.live.values()];
      if (this.mode.keepOrder && all && candidates.length === 0 && this.order.length) {
        this.order.shift(); // a task whose last attempt was printed, or never started here
        continue;
      }
      for (const l of candidates) {
        if (this.lock && !l.copies.includes(this.lock)) continue;
        try {
          if (l.ended) {
            for (const c of l.copies) await c.rest();
            this.lock = null;
            this.live.delete(l.task.token);
            continue;
          }
          for (const c of l.copies) {
            if (this.lock && this.lock !== c) continue;
            for (let i = 0; i < READS_PER_POLL && (await c.next()); i++) {
              // each look copies one piece
            }
            this.lock = c.cut ? c : null;
          }
        } catch (err) {
          this.lostCount++;
          this.live.delete(l.task.token);
          this.lock = null;
          for (const c of l.copies) await c.close();
          this.note(`--print: the output of attempt ${l.task.attempt} of ${l.task.key} could not be printed: ${(err as Error).message}`);
        }
      }
      if (!this.mode.keepOrder || !head || this.live.has(head.task.token)) break;
      if (head.state === 'final' || all) this.order.shift();
      else break; // its next attempt takes its place
    }
    if (this.live.size === 0 && this.poller) {
      clearInterval(this.poller);
      this.poller = null;
    }
  }

  private emit(task: ClaimedTask, id: number | string = task.token): void {
    const prefix = this.prefixOf(id);
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
async function copyOut(path: string, chunk: number, openStream: () => PrintedStream): Promise<void> {
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

/** The task a group's output is printed as: its first item, named by every key of the command (`--tag`). */
function tagged(task: ClaimedTask, printed: PrintedAs): ClaimedTask {
  return printed.keys.length > 1 ? { ...task, key: printed.keys.join(' ') } : task;
}
