/** What a source gives the store for each task (its payload and key) and what `enqueue` takes with it. */

/** The stored JSON a task carries; `version` lets later releases change its shape. */
export interface TaskPayload {
  version: 1;
  /** Absolute path of the file this task reads. */
  path: string;
  /** Path relative to the source root (the file itself for a file source). */
  rel: string;
  start?: number;
  end?: number;
  /** An item of a list (items source): its text, as the line holds it without its line end. */
  item?: string;
  /** A JSON Lines item: the parsed record (an integer beyond 2^53 is its text, a string; `item` holds the line exactly). */
  record?: unknown;
  /** An item that is not valid UTF-8: its exact bytes, base64 (`item` then holds a lossy text). */
  bytes?: string;
  /**
   * An item given as `:::` / `::::` groups: its values, exactly, one per group (`{1}`, `{2}`…);
   * `item` is them joined by a space (`{}`).
   */
  args?: string[];
  /**
   * A block of stdin (`run - --pipe`): its bytes, stored with the task so nothing needs stdin
   * again; its text when it is valid UTF-8, else base64 with `base64` set. `start` and `end`
   * are its byte offsets in the stream; `path` and `rel` are `-`.
   */
  block?: string;
  base64?: true;
  /** `--colsep` of the list: the regex that splits `item` into `{1}`, `{2}`… (absent: whitespace). */
  colsep?: string;
  /**
   * Re-queued by `--rerun-changed` for a record edited in the list: it runs even where its
   * declared output is in place, since an item's output does not say which record made it.
   */
  rerun?: true;
}

/** What the splitter produces for one task. */
export interface TaskSpec {
  key: string;
  payload: TaskPayload;
  /** `size:mtimeMs` of the file (for chunks, of the whole file they come from). */
  fingerprint: string | null;
  /** With stages: the stage, the split item's key, the stages it needs, its budget. */
  stage?: string;
  item?: string;
  needs?: string[];
  maxAttempts?: number;
  /**
   * Where a never-tried task is claimed (SPEC §10, task-order.ts): higher `priority` first
   * (--priority), then lower `rank` (--order), then key order. Both 0 when absent.
   */
  priority?: number;
  rank?: number;
  /** --rate-key: the key the batch's rate applies to (the template rendered for this task); absent: none. */
  rateKey?: string;
}

/**
 * The rank of a task whose key has a learned duration (--order history): -LEARNED_RANK minus
 * its median in ms, below every size rank (sizes are capped under it). The store reads the
 * learned durations back from the ranks for the ETA (learnedWork).
 */
export const LEARNED_RANK = 2 ** 50;

/** The learned durations of a batch's tasks (--order history), from their ranks: what is open, what succeeded. */
export interface LearnedWork {
  /** Open (PENDING or RUNNING) tasks with a learned duration, and the sum of those durations (ms). */
  openKnown: number;
  openMs: number;
  /** Succeeded tasks with a learned duration, and the sum of those durations (ms). */
  doneKnown: number;
  doneMs: number;
}

/** A run's --adaptive level is published when it changes, and at least this often while it holds: status shows levels fresher than three times this. */
export const LEVEL_REFRESH_MS = 10_000;

/** --adaptive: the level one run or worker of a batch keeps running at (published for status and watch). */
export interface PublishedLevel {
  owner: string;
  /** Attempts it keeps running now, of at most `max` (its -j). */
  level: number;
  max: number;
  /** Starts per second it keeps to (found at its first busy answer), or null. */
  pace: number | null;
  updatedAt: number;
}

/** A stored task's claim rank, as `set` changes it (see TaskSpec's priority and rank). */
export interface Rank {
  id: number;
  priority: number;
  rank: number;
}

/** The key of a task's learned duration (`learnedDurations`, --order history): its stage (empty without stages) and its key. */
export const durationKey = (stage: string, key: string) => `${stage}\u0000${key}`;

export interface NewBatch {
  name: string;
  source: string;
  job: Record<string, unknown>;
  maxAttempts: number;
}

export interface EnqueueOptions {
  /** Re-queue succeeded tasks whose file changed (`--rerun-changed`). */
  rerunChanged?: boolean;
  /** Count the specs whose key came more than once (a list's repeated items): `repeated`. */
  countRepeated?: boolean;
  /**
   * The tasks run what their payloads hold, not the source as it is now (a list's items): a
   * fingerprint stands for the payload, so a task whose fingerprint the source no longer gives
   * keeps its payload, whatever its status, and counts as `changed`; with `rerunChanged`, every
   * such task not RUNNING takes the new payload and goes back to PENDING with a fresh budget.
   * Of specs repeating a key, the first is the one that counts, as for the insert.
   */
  itemPayloads?: boolean;
  /**
   * --rate-key: give the stored tasks the rate keys of their specs (whatever their status, where
   * the task runs what the spec holds): when the template changed, or records were put back.
   * Off (the default) saves a join over the batch at every other run.
   */
  rekey?: boolean;
}
