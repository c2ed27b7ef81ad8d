/** When the coordinator's next tick runs: the next loop turn, a moment later to share a commit, at a due retry, or to carry a start. */

/** How long a success may wait for others to share its tick, while every slot holds its next attempt. */
const COALESCE_MS = 2;
/**
 * How long the start of a queued attempt may wait for a tick to carry it to the store (its task
 * shows `queued` until then). Fast attempts end well within it, so their starts ride along with
 * the commits of results and cost no transaction of their own.
 */
const START_MARK_MS = 100;

/**
 * The coordinator's timers. A tick runs on setImmediate, so no result waits more than one loop
 * turn — or, for a success while every slot still holds its next attempt, within COALESCE_MS,
 * so one transaction carries what several attempts reported meanwhile: no slot waits for it, and
 * a commit and a claim cost per group. Every timer asks again through `request` (the
 * coordinator's own checks: a run that ended, a store that is down), never ticks directly.
 */
export class TickTimer {
  private queued = false;
  private coalesce: NodeJS.Timeout | undefined;
  private wake: NodeJS.Timeout | undefined;
  private startMark: NodeJS.Timeout | undefined;

  constructor(
    private readonly request: () => void,
    private readonly tick: () => void,
  ) {}

  /** A tick on the next loop turn (one at a time); with `coalesce`, within COALESCE_MS instead. */
  next(coalesce: boolean): void {
    if (this.queued) return;
    if (coalesce) {
      this.coalesce ??= setTimeout(() => {
        this.coalesce = undefined;
        this.request();
      }, COALESCE_MS);
      return;
    }
    clearTimeout(this.coalesce);
    this.coalesce = undefined;
    this.queued = true;
    setImmediate(() => {
      this.queued = false;
      this.tick();
    });
  }

  /** A tick in `delayMs` (at least 5 ms): when the next retry is due, or the next poll. */
  wakeIn(delayMs: number): void {
    clearTimeout(this.wake);
    this.wake = setTimeout(() => this.request(), Math.max(delayMs, 5));
  }

  /** A tick within START_MARK_MS, to carry a queued attempt's start to the store if nothing else does sooner. */
  carryStart(): void {
    this.startMark ??= setTimeout(() => {
      this.startMark = undefined;
      this.request();
    }, START_MARK_MS);
  }

  /** The run is over: no timer may hold the process or tick. */
  cancel(): void {
    clearTimeout(this.wake);
    clearTimeout(this.coalesce);
    clearTimeout(this.startMark);
  }
}
