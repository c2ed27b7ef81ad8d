import { groupAlive, groupMembers, killGroup } from './kill-group.js';

/** How often a group that outlived its command is looked at again. */
const POLL_MS = 20;
/** After SIGKILL, how long the group gets to disappear (an uninterruptible sleep can delay it). */
const AFTER_KILL_MS = 1000;

/**
 * Stopping one attempt's process group: SIGTERM, then SIGKILL after the grace, whatever
 * its first process does meanwhile. The KILL is aimed at the group, not at the command:
 * a shell that dies of the TERM while its children ignore it (`trap '' TERM`) does not
 * cancel it. `ended()` is when the attempt is over: once no live process is left in the
 * group, or shortly after the KILL.
 */
export class GroupStop {
  private timer: NodeJS.Timeout | undefined;
  private killedAt: number | null = null;
  /** Its command ended with nothing of its group left: the group id may be another's by now. */
  private over = false;

  constructor(
    private readonly pgid: number,
    private readonly graceMs: number,
  ) {}

  /** TERM now and KILL after the grace; later calls change nothing. */
  begin(): void {
    if (this.timer || this.killedAt !== null || this.over) return;
    signal(this.pgid, 'SIGTERM');
    this.timer = setTimeout(() => this.kill(), this.graceMs);
  }

  /** At once, without waiting for the grace (the worker is going away). */
  kill(): void {
    if (this.over) return;
    clearTimeout(this.timer);
    this.killedAt ??= Date.now();
    signal(this.pgid, 'SIGKILL');
  }

  /** The command has ended and nothing of its group is left: no signal is sent to it any more. */
  settled(): void {
    clearTimeout(this.timer);
    this.over = true;
  }

  /**
   * The command has ended: whatever is left of its group (background children, children
   * ignoring TERM) is stopped, and this resolves once the group is empty: true if anything was left.
   */
  async ended(): Promise<boolean> {
    let left = false;
    while (groupAlive(this.pgid)) {
      left = true;
      if (this.killedAt !== null && Date.now() - this.killedAt > AFTER_KILL_MS) break;
      this.begin();
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
    clearTimeout(this.timer);
    return left;
  }
}

/** Signals the group; one none of whose processes may be signalled (EPERM) is waited out like any other. */
function signal(pgid: number, sig: NodeJS.Signals): void {
  try {
    killGroup(pgid, sig);
  } catch {
    // EPERM: only processes of another user are left (a setuid program); nothing to do but wait
  }
}

/**
 * Stops the processes of group `pgid` other than `self` (a module handler's children, in
 * its worker's group): TERM, KILL after the grace, until none is left or shortly after the
 * KILL. Without /proc nothing can be told apart from the worker, and nothing is done.
 */
export async function stopOthersInGroup(pgid: number, self: number, graceMs: number): Promise<void> {
  const started = Date.now();
  const termed = new Set<number>();
  for (;;) {
    const others = groupMembers(pgid, self);
    if (!others?.length) return;
    const late = Date.now() - started;
    if (late > graceMs + AFTER_KILL_MS) return;
    for (const pid of others) {
      const signal = late >= graceMs ? 'SIGKILL' : termed.has(pid) ? null : 'SIGTERM';
      if (!signal) continue;
      termed.add(pid);
      try {
        process.kill(pid, signal);
      } catch {
        // gone meanwhile
      }
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}
