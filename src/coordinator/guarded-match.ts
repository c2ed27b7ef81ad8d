import { Worker } from 'node:worker_threads';

/**
 * `--permanent-errors` patterns are the user's regular expressions, matched against texts from
 * handlers: a backtracking one (`(a+)+$` on a long run of `a`s) ran for hours inside the
 * coordinator's loop, where no commit, heartbeat or signal could run. So each match runs on a
 * worker thread and the loop waits for it at most MATCH_BUDGET_MS; a pattern that takes longer
 * is stopped there, counts as not matching, and is not tried again in this run (docs/bounds-and-streams.md).
 * The texts are bounded (4 KiB each), so an ordinary pattern answers in microseconds.
 */
const MATCH_BUDGET_MS = 1000;
/** How long the first match may wait for the thread to start (a loaded machine). */
const START_BUDGET_MS = 10_000;

const THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
const state = new Int32Array(workerData);
const compiled = new Map();
parentPort.on('message', ({ source, texts }) => {
  let re = compiled.get(source);
  if (!re) compiled.set(source, (re = new RegExp(source)));
  const hit = texts.some((t) => t !== null && re.test(t));
  Atomics.store(state, 1, hit ? 1 : 0);
  Atomics.store(state, 0, 1);
  Atomics.notify(state, 0);
});
Atomics.store(state, 2, 1);
Atomics.notify(state, 2);
`;

export class GuardedMatcher {
  private worker: Worker | null = null;
  private state = new Int32Array(new SharedArrayBuffer(12));
  private readonly stalled = new Set<string>();

  constructor(private readonly patterns: RegExp[]) {}

  /** Whether any pattern matches any of the texts; a pattern past its budget is skipped from then on. */
  matchesAny(texts: (string | null)[]): boolean {
    for (const p of this.patterns) {
      if (this.stalled.has(p.source)) continue;
      const hit = this.match(p.source, texts);
      if (hit === null) this.stalled.add(p.source);
      else if (hit) return true;
    }
    return false;
  }

  /** Sources of the patterns stopped at their budget, for a note. */
  get stoppedPatterns(): string[] {
    return [...this.stalled];
  }

  private match(source: string, texts: (string | null)[]): boolean | null {
    const worker = this.start();
    if (Atomics.load(this.state, 2) === 0) Atomics.wait(this.state, 2, 0, START_BUDGET_MS);
    Atomics.store(this.state, 0, 0);
    worker.postMessage({ source, texts });
    if (Atomics.wait(this.state, 0, 0, MATCH_BUDGET_MS) === 'timed-out' && Atomics.load(this.state, 0) === 0) {
      void worker.terminate(); // stops the regex where it is; the next match starts a new thread
      this.worker = null;
      return null;
    }
    return Atomics.load(this.state, 1) === 1;
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    this.state = new Int32Array(new SharedArrayBuffer(12));
    const worker = new Worker(THREAD, { eval: true, workerData: this.state.buffer });
    worker.unref(); // never what keeps the coordinator's process alive
    worker.on('error', () => undefined);
    this.worker = worker;
    return worker;
  }
}
