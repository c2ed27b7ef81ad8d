/** The environment hooks the test suite sets to fault a run or shorten its waits: each read once, here and nowhere else. */
// Read at load, as each was before in the module that uses it; none is ever set in-process.
export const TEST_HOOKS = {
  /** `SPLITDANCE_FAILPOINT=name:N`: a fault injected at the N-th pass of `name` (store/failpoint.ts lists them). */
  failpoint: process.env.SPLITDANCE_FAILPOINT,
  /**
   * `SPLITDANCE_HOST_ID`: gives this process another machine's identity (lease-owner.ts), so
   * one machine can simulate several hosts sharing a PostgreSQL store.
   */
  hostId: process.env.SPLITDANCE_HOST_ID,
  /**
   * `SPLITDANCE_RECONNECT_MS`: how long a run waits out an unreachable store (coordinator/outage.ts);
   * tests shorten it to wait one out. docs/cron.md names it for whoever needs another limit.
   */
  reconnectMs: process.env.SPLITDANCE_RECONNECT_MS,
  /**
   * `SPLITDANCE_QUERY_TIMEOUT_MS`: how long a PostgreSQL statement may go unanswered
   * (postgres/pg-errors.ts); tests shorten it to find a silent server within seconds.
   */
  queryTimeoutMs: process.env.SPLITDANCE_QUERY_TIMEOUT_MS,
} as const;
