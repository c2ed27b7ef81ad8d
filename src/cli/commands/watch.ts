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
import { awaitBatch } from '../await-batch.js';

export interface WatchFlags extends OutputFlags {
  db?: string;
  batch?: string;
  interval?: string;
}

type Stop = 'key' | 'SIGINT' | 'SIGTERM';

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
      const signal = await awaitBatch(db, flags.batch, flags.quiet ?? false, io, () => stopper.stop, { readonly: true });
      if (signal) return stopper.exitCode();
    }
    return await withBatch(flags, io, (store, batch) => follow(new LiveView(store, batch), intervalMs, flags, io, stopper), { readonly: true });
  } finally {
    stopper.dispose();
  }
}

async function follow(view: LiveView, intervalMs: number, flags: WatchFlags, io: Io, stopper: Stopper): Promise<number> {
  const screen = liveTerminal(io, 'stdout') ? new Screen(io, flags) : null;
  try {
    for (;;) {
      const facts = await view.tick();
      if (screen) screen.draw(facts, stopper.keys);
      else line(io.stdout, plainLine(facts));
      if (facts.done) return verdict(facts);
      if (stopper.stop) return stopper.exitCode();
      await stopper.sleep(intervalMs);
      if (stopper.stop) return stopper.exitCode();
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
 * raw mode, so the keys arrive without Enter and Ctrl-C as a byte), SIGINT and SIGTERM.
 * `dispose` puts stdin back in the mode it was in, on every way out.
 */
class Stopper {
  stop: Stop | null = null;
  readonly keys: boolean;
  private wake: (() => void) | null = null;
  private readonly stdin = process.stdin;
  private readonly onInt = () => this.end('SIGINT');
  private readonly onTerm = () => this.end('SIGTERM');
  private readonly onData = (chunk: Buffer) => {
    const text = chunk.toString('latin1');
    if (text.includes('q') || text.includes('Q') || text.includes('\x03')) this.end('key');
  };

  constructor() {
    process.on('SIGINT', this.onInt);
    process.on('SIGTERM', this.onTerm);
    this.keys = Boolean(this.stdin.isTTY);
    if (this.keys) {
      this.stdin.setRawMode(true);
      this.stdin.on('data', this.onData);
      this.stdin.resume();
    }
  }

  private end(why: Stop): void {
    this.stop ??= why;
    this.wake?.();
  }

  sleep(ms: number): Promise<void> {
    return new Promise((done) => {
      const timer = setTimeout(() => {
        this.wake = null;
        done();
      }, ms);
      this.wake = () => {
        clearTimeout(timer);
        this.wake = null;
        done();
      };
    });
  }

  exitCode(): number {
    return this.stop === 'SIGTERM' ? EXIT.SIGTERM : EXIT.OK;
  }

  dispose(): void {
    process.off('SIGINT', this.onInt);
    process.off('SIGTERM', this.onTerm);
    if (this.keys) {
      this.stdin.off('data', this.onData);
      this.stdin.setRawMode(false);
      this.stdin.pause();
    }
  }
}
