import { UsageError } from '../../errors.js';
import { EXIT } from '../../exit-codes.js';
import { parseDuration } from '../../job/units.js';
import { verdict } from '../../status/batch-status.js';
import { LiveView, type LiveFacts } from '../../status/live-view.js';
import { resolveDbPath } from '../../store/open-store.js';
import { line, liveTerminal, type Io, type OutputFlags } from '../io.js';
import { colors } from '../colors.js';
import { withBatch } from '../with-store.js';
import { fit, frameLines, plainLine } from '../watch-frame.js';
import { awaitBatch } from '../../run/await-batch.js';
import { installSignals, pause } from '../../run/signals.js';

export interface WatchFlags extends OutputFlags {
  db?: string;
  batch?: string;
  interval?: string;
}

/** Cursor home, then each line cleared to its end and everything below the frame: redrawn in place, no flicker. */
const HOME = '\x1b[H';
const CLEAR_EOL = '\x1b[K';
const CLEAR_BELOW = '\x1b[J';
const HIDE_CURSOR = '\x1b[?25l';
const SHOW_CURSOR = '\x1b[?25h';

/**
 * `splitdance watch` (and `status --watch`): follows a batch that any process runs, reading
 * the store read-only every interval. On a terminal a live view redrawn in place, `q` or
 * Ctrl-C end it; otherwise one plain line per interval. It ends by itself once nothing is
 * left to run, with `status`'s verdict: 0 when every task succeeded, 1 when some FAILED or
 * were CANCELLED. Being asked to stop (q, Ctrl-C, SIGINT) is a normal end: 0; SIGTERM: 143.
 * With --batch naming a batch that does not exist yet, it waits for it (as `worker --batch`
 * does), so it can be started before the cron `run` that creates it.
 */
export async function watchCommand(flags: WatchFlags, io: Io): Promise<number> {
  if (flags.json) throw new UsageError('watch has no --json: `status --json` prints one snapshot');
  const intervalMs = parseDuration(flags.interval ?? '1s', '--interval');
  if (intervalMs <= 0) throw new UsageError(`--interval expects a duration above 0; got "${flags.interval}"`);
  const stopper = new Stopper();
  try {
    if (flags.batch !== undefined) {
      const db = resolveDbPath(flags.db, io.cwd, io.env);
      const say = (m: string) => {
        if (!flags.quiet) line(io.stderr, m);
      };
      if (!(await awaitBatch(db, flags.batch, stopper.signal, say, { readonly: true }))) return stopper.exitCode();
    }
    return await withBatch(flags, io, (store, batch) => drawUntilDone(new LiveView(store, batch), intervalMs, flags, io, stopper), { readonly: true });
  } finally {
    stopper.dispose();
  }
}

async function drawUntilDone(view: LiveView, intervalMs: number, flags: WatchFlags, io: Io, stopper: Stopper): Promise<number> {
  const screen = liveTerminal(io, 'stdout') ? new Screen(io, flags) : null;
  try {
    for (;;) {
      const facts = await view.tick();
      if (screen) screen.draw(facts, stopper.keys);
      else line(io.stdout, plainLine(facts));
      if (facts.done) return verdict(facts);
      if (stopper.signal.aborted) return stopper.exitCode();
      if (await pause(intervalMs, stopper.signal)) return stopper.exitCode();
    }
  } finally {
    screen?.close();
  }
}

/** The terminal while the live view owns it; `close` gives it back as it was. */
class Screen {
  private readonly c;
  private readonly restore = () => this.io.stdout.write(SHOW_CURSOR);

  constructor(
    private readonly io: Io,
    flags: WatchFlags,
  ) {
    this.c = colors(io, flags, 'stdout');
    io.stdout.write(HIDE_CURSOR);
    process.on('exit', this.restore);
  }

  draw(facts: LiveFacts, keys: boolean): void {
    const width = (this.io.stdout as NodeJS.WriteStream).columns || 80;
    const height = (this.io.stdout as NodeJS.WriteStream).rows || 24;
    const lines = frameLines(facts, this.c);
    if (!facts.done) lines.push('', this.c.dim(keys ? 'q or Ctrl-C quits' : 'Ctrl-C quits'));
    const shown = lines.slice(0, Math.max(1, height - 1)).map((l) => fit(l, width - 1) + CLEAR_EOL);
    this.io.stdout.write(`${HOME}${shown.join('\n')}\n${CLEAR_BELOW}`);
  }

  close(): void {
    this.restore();
    process.off('exit', this.restore);
  }
}

/**
 * What ends a watch besides the batch finishing: `q` or Ctrl-C typed on a terminal (stdin in
 * raw mode, so the keys arrive without Enter and Ctrl-C as a byte), SIGINT and SIGTERM (not
 * SIGHUP: a watch whose terminal closed just ends). One AbortSignal, `signal`, aborts at the
 * first of them. `dispose` removes the signal handlers and puts stdin back in the mode it was
 * in, on every way out.
 */
class Stopper {
  readonly keys: boolean;
  private readonly signals = installSignals(['SIGINT', 'SIGTERM']);
  private readonly typed = new AbortController();
  readonly signal = AbortSignal.any([this.signals.signal, this.typed.signal]);
  private readonly stdin = process.stdin;
  private readonly onData = (chunk: Buffer) => {
    const text = chunk.toString('latin1');
    if (text.includes('q') || text.includes('Q') || text.includes('\x03')) this.typed.abort('key');
  };

  constructor() {
    this.keys = Boolean(this.stdin.isTTY);
    if (this.keys) {
      this.stdin.setRawMode(true);
      this.stdin.on('data', this.onData);
      this.stdin.resume();
    }
  }

  /** Being asked to stop is a normal end (0), but for SIGTERM: 143. */
  exitCode(): number {
    return this.signal.reason === 'SIGTERM' ? EXIT.SIGTERM : EXIT.OK;
  }

  dispose(): void {
    this.signals.dispose();
    if (this.keys) {
      this.stdin.off('data', this.onData);
      this.stdin.setRawMode(false);
      this.stdin.pause();
    }
  }
}
