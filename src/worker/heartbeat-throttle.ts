/** At most one heartbeat message per attempt in this window. */
const HEARTBEAT_WINDOW_MS = 250;

/**
 * `ctx.heartbeat()` for one attempt: a handler may call it in a tight loop, so at most one
 * message per window leaves; a call inside a window is sent when the window ends (trailing),
 * so the last call is always reported, and never before it was made: the coordinator, which
 * times silence from when a message arrives, never sees a sign of life earlier than the real
 * last one, so it never kills early.
 */
export class HeartbeatThrottle {
  private sentAt = -Infinity;
  private trailing: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly send: () => void,
    private readonly windowMs = HEARTBEAT_WINDOW_MS,
  ) {}

  /** ctx.heartbeat(). */
  beat = (): void => {
    if (this.stopped || this.trailing !== undefined) return; // a send is due at the window's end
    const wait = this.sentAt + this.windowMs - performance.now();
    if (wait <= 0) return this.fire();
    this.trailing = setTimeout(() => {
      this.trailing = undefined;
      if (!this.stopped) this.fire();
    }, Math.ceil(wait));
  };

  /** The attempt ended: nothing more is sent for it. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.trailing);
    this.trailing = undefined;
  }

  private fire(): void {
    this.sentAt = performance.now();
    this.send();
  }
}
