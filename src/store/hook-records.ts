/**
 * A batch's hooks as the store keeps them (SPEC §10: `--on-complete`, `--on-failure`): each
 * hook's run at each end of the batch, recorded before its command starts, so it runs once
 * across crashes, reruns and hosts (at least once, with a stable id, when a run dies while the
 * command runs: the next start runs it again).
 */

export type HookKind = 'complete' | 'failure';

/** What a start asks to run: the hook of the batch's end `endMark`, as `owner`, holding it for `leaseMs` from `now`. */
export interface HookTake {
  batchId: number;
  hook: HookKind;
  /** The end it runs for (run/batch-hooks.ts): a batch that ends again after more work runs its hooks again. */
  endMark: string;
  command: string;
  owner: string;
  now: number;
  leaseMs: number;
}

export interface HookRecord {
  hook: HookKind;
  endMark: string;
  /** The stable id the command is given (SPLITDANCE_HOOK_ID): the same on every start of this hook at this end. */
  id: string;
  command: string;
  owner: string;
  /** How many times its command was started: 2 when the first start's run died while it ran. */
  runs: number;
  startedAt: number;
  leaseExpiresAt: number;
  /** Null while it runs (or until a start takes it over). */
  endedAt: number | null;
  exitCode: number | null;
  signal: string | null;
  /** The last HOOK_OUTPUT_MAX characters of its stdout and stderr. */
  output: string | null;
}

/** What the store keeps of a hook's output: its end. */
export const HOOK_OUTPUT_MAX = 4096;

export interface HookEnd {
  endedAt: number;
  exitCode: number | null;
  signal: string | null;
  output: string;
}

export interface HookStore {
  /**
   * In one transaction: records the hook's run for its end and gives it to `owner`, unless it is
   * recorded already. One recorded and not ended whose owner is dead (`judge`, this host's
   * processes), or whose lease expired while its owner is no live process here, is taken over:
   * the same id, one more run. Returns the record as it is after, and whether `owner` holds it
   * now to run (also when it held it already: a take retried after a lost reply).
   */
  takeHook(take: HookTake, judge: { dead(owner: string): boolean; liveHere(owner: string): boolean }): Promise<{ taken: boolean; record: HookRecord }>;
  /** Keeps `owner`'s hold on a running hook; false when another start took it over. */
  renewHook(batchId: number, hook: HookKind, endMark: string, owner: string, leaseExpiresAt: number): Promise<boolean>;
  /** Records the hook's end, fenced on `owner` (again with the same end: a retry after a lost reply); false when another start took it over. */
  endHook(batchId: number, hook: HookKind, endMark: string, owner: string, end: HookEnd): Promise<boolean>;
}
