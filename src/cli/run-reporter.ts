import cliProgress from 'cli-progress';
import type { ChalkInstance } from 'chalk';
import type { BatchObserver, RunStart, RunSummary } from '../run/run-batch.js';
import type { RawRunFlags } from '../job/run-options.js';
import type { ClaimedTask, Counts, LearnedWork, ReleasedTask, Settlement, TaskStatus } from '../store/task-store.js';
import type { PrintedStream } from '../run/attempt-printer.js';
import { PrintedLines } from './printed-lines.js';
import { formatMs } from '../job/units.js';
import { errorSignature } from '../status/error-signature.js';
import { weightedOpen } from '../status/busy-rate.js';
import { longInterval, type LongTimer } from '../long-timer.js';
import { plural, printable } from './format.js';
import { line, liveTerminal, type Io } from './io.js';
import { colors } from './colors.js';
import { givenDb } from './suggested-commands.js';
import { summaryLines } from './run-summary.js';
import { monotonicMs } from '../wall-steps.js';
import { ErrorKinds, FailureDigest, MAX_KINDS } from './failure-digest.js';
import { barLine, type BarFacts } from './bar-line.js';

export type ReportMode = 'tty' | 'plain' | 'json' | 'quiet';

/**
 * What `run` shows while it works: a progress bar on a terminal; otherwise plain
 * timestamped lines (no control characters) for cron and CI; NDJSON events with
 * --json; nothing but failures with --quiet. Human text goes to stderr, data to stdout.
 */
export class RunReporter implements BatchObserver {
  /** The rate counts from the run's start, not from when the workers were still starting. */
  private started = monotonicMs();
  private finishedHere = 0;
  /** Attempts that ended in this run (also those retried later), and tasks it added: both 0 when it ran nothing. */
  private attemptsHere = 0;
  private insertedHere = 0;
  /** Tasks this run recorded SUCCESS without running: their declared output was up to date. */
  private upToDateHere = 0;
  private bars: cliProgress.MultiBar | null = null;
  private bar: cliProgress.SingleBar | null = null;
  private timer: LongTimer | undefined; // --progress-interval may be up to a year
  private barStopped = false;
  private readonly redraw = () => {
    if (this.bars && !this.barStopped) this.bars.update();
  };
  /** `--quiet` repeats the failures at the end: a bounded digest of them, however many. */
  private readonly failures = new FailureDigest();
  /** The error signatures (status's clusters) this run has shown a failure of, a bounded number. */
  private readonly errorKinds = new ErrorKinds();
  /** `--print --tag`: printed lines start with their task's key and a tab. */
  tag = false;
  /** This run replaced the batch's handler or output: FAILED tasks keep their old failure until retried, with the new one. */
  definitionChanged = false;
  /**
   * `run` (not `worker` or `retry-failed --run`): a run that finds every task already finished
   * and runs nothing says so, and how to run them again (SPEC §6: never a silent no-op).
   * `outputs`: the batch declares outputs, so a new batch would find them up to date (`--force`).
   */
  nothingRan: { outputs: boolean } | null = null;

  constructor(
    private readonly io: Io,
    private readonly mode: ReportMode,
    private readonly c: ChalkInstance,
    /** The batch's counts, with its learned durations when it is ordered by them (the ETA weighs them). */
    private readonly counts: () => Promise<Counts & { work?: LearnedWork }>,
    private readonly intervalMs: number,
    /** `--db` as the user gave it (or undefined), repeated in the commands suggested at the end; SPLITDANCE_DB is read from io. */
    private readonly dbFlag?: string,
  ) {}

  /** The reporter `run` and `worker` show a batch's run with: the mode and colours their flags ask for. */
  static forFlags(io: Io, flags: Pick<RawRunFlags, 'json' | 'quiet' | 'color' | 'db'>, intervalMs: number, counts: () => Promise<Counts & { work?: LearnedWork }>): RunReporter {
    const mode: ReportMode = flags.json ? 'json' : flags.quiet ? 'quiet' : liveTerminal(io, 'stderr') ? 'tty' : 'plain';
    return new RunReporter(io, mode, colors(io, flags), counts, intervalMs, flags.db);
  }

  start(info: RunStart): void {
    this.started = monotonicMs();
    this.insertedHere = info.inserted;
    if (this.mode === 'json') {
      this.event({ event: 'start', ...info });
    } else if (this.mode !== 'quiet') {
      // Notes, the batch name and the source path are data: escaped, like every line of data.
      for (const n of info.notes) this.human(printable(n));
      this.human(
        `batch ${this.c.bold(printable(info.batch))}: ${plural(info.total, 'task')} (${info.inserted} new) from ${printable(info.source)}, ${plural(info.workers, 'worker')}, store ${printable(info.store)}${info.jobFile === null ? '' : `, job file ${printable(info.jobFile)}`}`,
      );
    }
    if (this.mode === 'tty') {
      const stream = this.io.stderr as NodeJS.WriteStream;
      this.bars = new cliProgress.MultiBar(
        {
          stream,
          // One line that fits the terminal's width (bar-line.ts), read again at every redraw.
          format: (_options: unknown, params: { value: number; total: number; maxWidth: number }, payload: Omit<BarFacts, 'done' | 'total'>) =>
            barLine({ ...payload, done: params.value, total: params.total }, params.maxWidth),
          hideCursor: true,
          clearOnComplete: false,
          etaBuffer: 50,
          // Autowrap stays on (cli-progress turns it off by default, which cut every longer line
          // printed above the bar at the last column): lines reach the terminal whole and wrap,
          // and the bar, shorter than the width, never does.
          linewrap: true,
        },
        cliProgress.Presets.shades_classic,
      );
      this.bar = this.bars.create(info.total, 0, { rate: '0.0', eta: '?', running: 0, queued: 0, retrying: 0, failed: 0 });
      // A resized terminal (SIGWINCH) gets a bar for its new width at once.
      stream.on?.('resize', this.redraw);
    }
    const every = this.mode === 'tty' ? 250 : this.intervalMs;
    if (this.mode !== 'quiet') this.timer = longInterval(() => void this.progress(), every);
  }

  attemptEnded(task: ClaimedTask, s: Settlement, status: TaskStatus): void {
    const terminal = status !== 'PENDING';
    this.attemptsHere++;
    if (terminal) this.finishedHere++;
    if (s.upToDate) this.upToDateHere++;
    if (this.mode === 'json') {
      this.event({
        event: 'attempt',
        key: task.key,
        attempt: task.attempt,
        outcome: s.outcome,
        terminal,
        status,
        durationMs: s.durationMs,
        exitCode: s.exitCode,
        error: s.error,
        ...(s.upToDate ? { upToDate: true } : {}),
      });
      return;
    }
    const failed = s.outcome !== 'SUCCESS' && s.outcome !== 'INTERRUPTED';
    // The first failure of each kind of error is shown as it happens, also while it is retried:
    // a broken command is seen in seconds, not when its retries are spent. Once per kind, not per task.
    // A busy answer's kind is its cause, not when it runs again.
    const kind = failed ? errorSignature((s.outcome === 'BUSY' ? s.error?.replace(/; tried again in .*$/, '') : s.error) ?? s.outcome) : null;
    const seen = kind !== null ? this.errorKinds.see(kind) : 'known';
    if (!terminal && this.mode !== 'quiet' && seen === 'first' && s.outcome === 'BUSY') {
      // Its error says when it runs again, and that no attempt was spent.
      this.human(`${this.c.yellow('busy')} ${printable(task.key)}: ${printable(s.error ?? s.outcome)} (the first busy answer of this kind; \`show KEY\` lists them)`);
    } else if (!terminal && this.mode !== 'quiet' && seen === 'first') {
      const next = s.retryAt ? `, retrying in ${formatMs(Math.max(0, s.retryAt - Date.now()))}` : ', retrying';
      this.human(
        `${this.c.yellow('error')} ${printable(task.key)} attempt ${task.attempt}${next}: ${printable(s.error ?? s.outcome)} (the first of this error; others like it are counted in \`status\`)`,
      );
    } else if (this.mode !== 'quiet' && seen === 'overflow') {
      this.human(`${this.c.yellow('error')} over ${MAX_KINDS} kinds of error: new ones are not shown (see \`status\`)`);
    }
    if (terminal && s.outcome !== 'SUCCESS') {
      const text = `${this.c.red(status)} ${printable(task.key)} after ${task.attempt} attempt${task.attempt === 1 ? '' : 's'}: ${printable(s.error ?? s.outcome)}`;
      // Shown as it happens, so kept only for --quiet, which repeats them at the end.
      if (this.mode === 'quiet') this.failures.add(text, kind ?? s.outcome);
      else this.human(text);
    }
  }

  released(tasks: ReleasedTask[]): void {
    if (this.mode === 'json') {
      for (const t of tasks) this.event({ event: 'released', key: t.key, owner: t.owner, failed: t.failed });
    } else if (this.mode !== 'quiet') {
      this.human(`recovered ${tasks.length} task${tasks.length === 1 ? '' : 's'} left RUNNING by a dead or expired owner (recorded LOST)`);
    }
  }

  note(message: string): void {
    if (this.mode === 'json') this.event({ event: 'note', message });
    else if (this.mode !== 'quiet') this.human(printable(message)); // notes name keys and batches: data
  }

  async finish(summary: RunSummary): Promise<void> {
    this.timer?.cancel();
    if (this.bar && !this.barStopped) {
      await this.progress();
      this.stopBar();
    }
    const k = summary.counts;
    if (this.mode === 'json') {
      this.event({ event: 'end', batch: summary.batch, exitCode: summary.exitCode, reason: summary.reason, elapsedMs: summary.elapsedMs, ...k, upToDate: this.upToDateHere });
      return;
    }
    if (this.mode === 'quiet' && summary.exitCode === 0) return;
    if (this.mode === 'quiet') for (const f of this.failures.report()) this.human(f);
    const here = { attempts: this.attemptsHere, inserted: this.insertedHere, upToDate: this.upToDateHere };
    const target = { batch: summary.batch, db: givenDb(this.dbFlag, this.io) };
    for (const l of summaryLines(summary, here, { definitionChanged: this.definitionChanged, nothingRan: this.nothingRan }, this.c, target)) this.human(l);
  }

  /**
   * The run ends with an error (the error boundary prints it and exits 4 for a store error):
   * with --json, an `error` event says so on stdout too, so a reader of the events is not left
   * waiting for an `end` that never comes.
   */
  failed(err: unknown): void {
    this.close();
    if (this.mode === 'json') this.event({ event: 'error', message: err instanceof Error ? err.message : String(err) });
  }

  /**
   * `--print`: where one attempt's stdout or stderr goes, in chunks of bounded size, each
   * written before the next is read (attempt-printer.ts prints one attempt after another, so
   * no other attempt's line lands inside it); a last line without its newline gets one. With
   * `--tag` every line starts with the task's key (escaped: it is data) and a tab. While the
   * bar is drawn, what goes to the terminal goes above the bar, in whole lines.
   */
  printed(task: ClaimedTask, stream: 'out' | 'err'): PrintedStream {
    const [out, terminal] = stream === 'out' ? [this.io.stdout, this.io.stdoutTty] : [this.io.stderr, this.io.tty];
    const lines = new PrintedLines(this.tag ? Buffer.from(`${printable(task.key)}\t`) : null);
    const aboveBar = () => Boolean(this.bars && !this.barStopped && terminal);
    const put = (bytes: Buffer): Promise<void> => {
      if (bytes.length === 0) return Promise.resolve();
      if (aboveBar()) {
        this.bars!.log(bytes.toString('utf8'));
        this.bars!.update();
        return Promise.resolve();
      }
      // Its callback comes once written, or at once with an error when the stream is lost (lost-output.ts).
      return new Promise((written) => out.write(bytes, () => written()));
    };
    return {
      write: (chunk) => put(lines.add(chunk, aboveBar())),
      end: () => put(lines.end()),
    };
  }

  /** Stops the progress timer and the bar; nothing of the reporter keeps the process alive after. Safe to call again. */
  close(): void {
    this.timer?.cancel();
    this.timer = undefined;
    this.stopBar();
  }

  /** The bar's last frame, then the terminal is the reporter's alone: later lines are written straight to it. */
  private stopBar(): void {
    if (this.barStopped || !this.bars) return;
    (this.io.stderr as NodeJS.WriteStream).off?.('resize', this.redraw);
    this.bars.update(); // writes the lines still held in the bar's log buffer, which stop() would drop
    this.bars.stop();
    this.barStopped = true;
  }

  private async progress(): Promise<void> {
    let k: Counts & { work?: LearnedWork };
    try {
      k = await this.counts();
    } catch {
      return; // progress is best effort; the run itself reports store errors
    }
    const done = k.succeeded + k.failed + k.cancelled;
    const elapsed = (monotonicMs() - this.started) / 1000;
    const rate = elapsed > 0 ? this.finishedHere / elapsed : 0;
    const left = k.total - done;
    const eta = rate > 0 ? formatMs((weightedOpen(left, k.work) / rate) * 1000) : '?';
    if (this.bar) {
      this.bar.setTotal(k.total);
      this.bar.update(done, { rate: rate.toFixed(1), eta, running: k.running, queued: k.queued, retrying: k.retrying, failed: k.failed });
      return;
    }
    this.human(
      `${new Date().toISOString()} ${done}/${k.total} done · ${k.running} running · ${k.queued} queued · ${k.retrying} retrying · ${k.failed} failed · ${rate.toFixed(1)} tasks/s · ETA ${eta}`,
    );
  }

  /**
   * One line for a person. While the bar is drawn it goes above the bar, at once (the bar's
   * library only writes its log buffer on its next redraw, and never after stop); once the bar
   * is stopped, straight to stderr, so a terminal gets every line the plain mode prints.
   */
  private human(text: string): void {
    if (this.bars && !this.barStopped) {
      this.bars.log(`${text}\n`);
      this.bars.update();
    } else line(this.io.stderr, text);
  }

  private event(e: Record<string, unknown>): void {
    line(this.io.stdout, JSON.stringify({ ...e, at: new Date().toISOString() }));
  }
}
