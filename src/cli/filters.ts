import { UsageError } from '../errors.js';
import { KeyGlob } from '../key-glob.js';
import { TASK_STATUSES, type TaskStatus } from '../store/task-store.js';

/**
 * A filter flag (`--key`, `--error`, `--cluster`) as given, refusing an empty one: a script
 * whose variable is unset passes `--key ''`, and "no filter" would then act on every task.
 * Leaving the flag out is how to mean every task.
 */
export function requireFilter(value: string | undefined, flag: string): string | undefined {
  if (value !== undefined && value.trim() === '') {
    throw new UsageError(`${flag} is empty; give a non-empty value (is a shell variable unset?), or leave ${flag} out to mean every task`);
  }
  return value;
}

/**
 * `--key PATTERN`: a key the batch has, given as it is, matches that key alone (keys may hold
 * `[`, `*`, `!` and braces); any other text is a glob (`*`, `?`, `[…]`, `{a,b}`) that never
 * negates: a leading `!` is a character of the key, never "every task but". Without a pattern,
 * undefined (every task). A glob matches in time linear in the key (key-glob.ts): it runs on
 * every key inside the store's write transaction.
 */
export async function keyMatcher(
  store: { getTask(batchId: number, key: string): Promise<unknown> },
  batchId: number,
  pattern: string | undefined,
): Promise<((key: string) => boolean) | undefined> {
  if (pattern === undefined) return undefined;
  if ((await store.getTask(batchId, pattern)) !== undefined) return (key) => key === pattern;
  const glob = new KeyGlob(pattern);
  return (key) => glob.matches(key);
}

/** Stops a page walk at the first task found. */
class Found extends Error {}

/**
 * Whether a `--key` glob matches every unfinished task of the batch (PENDING or RUNNING, the
 * ones a cancel ends): `cancel` asks for `--all` then, so a glob written too wide (or a key
 * that was meant exactly and is not there) does not end the whole batch for good. Stops at
 * the first unfinished task it does not match; one unfinished task is never "every task"
 * (the glob named it).
 */
export async function matchesEveryUnfinished(
  store: { eachTaskPage(filter: { batchId: number; keyMatches: (key: string) => boolean }, onPage: (tasks: { status: string }[]) => Promise<void>): Promise<void> },
  batchId: number,
  matches: (key: string) => boolean,
  unfinished: number,
): Promise<boolean> {
  if (unfinished < 2) return false;
  try {
    await store.eachTaskPage({ batchId, keyMatches: (key) => !matches(key) }, async (tasks) => {
      if (tasks.some((t) => t.status === 'PENDING' || t.status === 'RUNNING')) throw new Found();
    });
  } catch (err) {
    if (err instanceof Found) return false;
    throw err;
  }
  return true;
}

/** `--status S` (tasks, results): a task status, or RETRYING (PENDING after an attempt); undefined: every task. */
export function parseStatus(value: string | undefined): { status: TaskStatus; retrying?: boolean } | undefined {
  if (value === undefined) return undefined;
  const upper = value.toUpperCase();
  if (upper === 'RETRYING') return { status: 'PENDING', retrying: true };
  if (!(TASK_STATUSES as readonly string[]).includes(upper)) {
    throw new UsageError(`--status expects one of ${TASK_STATUSES.join(', ')} (or RETRYING); got "${value}"`);
  }
  return { status: upper as TaskStatus };
}
