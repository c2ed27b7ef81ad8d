import { UsageError } from '../../errors.js';
import { openStore, resolveDbPath } from '../../store/open-store.js';
import type { CommandModel } from '../help/command-model.js';
import { bashCompletion, fishCompletion, zshCompletion } from '../help/completion.js';
import type { Io } from '../io.js';
import { resolveBatch } from '../resolve-batch.js';

const SCRIPTS: Record<string, (commands: CommandModel[]) => string> = { bash: bashCompletion, zsh: zshCompletion, fish: fishCompletion };

/** How many task keys `--keys` offers at most: a completion lists, it does not page a batch. */
export const KEYS_OFFERED = 100;

/** A name or key that can stand on one line of the list the scripts read. */
const oneLine = (s: string) => !/[\p{Cc}\u2028\u2029]/u.test(s);

/**
 * `splitdance completion bash|zsh|fish` prints the completion script; `--batches` (what the
 * scripts call) prints the store's batch names, one a line, and `--keys PREFIX` the task keys
 * starting with PREFIX of `--batch` (the most recent batch without it), the first
 * KEYS_OFFERED in creation order. A completion must never disturb the shell: no store, or one
 * that cannot be read, or no such batch, completes nothing; a name or key that cannot stand
 * on one line (a newline or another control character in it) is left out.
 */
export async function completionCommand(
  shell: string | undefined,
  flags: { batches?: boolean; keys?: string; batch?: string; db?: string },
  commands: CommandModel[],
  io: Io,
): Promise<number> {
  if (flags.batches || flags.keys !== undefined) {
    try {
      const store = await openStore(resolveDbPath(flags.db, io.cwd, io.env), 'read');
      try {
        if (flags.batches) {
          for (const b of await store.listBatches()) if (oneLine(b.name)) io.stdout.write(`${b.name}\n`);
        } else {
          const prefix = flags.keys!;
          const batch = await resolveBatch(store, flags.batch);
          const tasks = await store.listTasks({ batchId: batch.id, keyMatches: (k) => k.startsWith(prefix) && oneLine(k), limit: KEYS_OFFERED });
          for (const t of tasks) io.stdout.write(`${t.key}\n`);
        }
      } finally {
        await store.close();
      }
    } catch {
      // nothing to complete
    }
    return 0;
  }
  const script = shell === undefined ? undefined : SCRIPTS[shell];
  if (!script) throw new UsageError(`completion needs a shell: bash, zsh or fish${shell === undefined ? '' : `, not "${shell}"`} (splitdance completion bash)`);
  io.stdout.write(script(commands));
  return 0;
}
