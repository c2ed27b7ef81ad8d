import { UsageError } from '../../errors.js';
import { openForReading, resolveDbPath } from '../../store/open-store.js';
import type { CommandModel } from '../help/command-model.js';
import { bashCompletion, fishCompletion, zshCompletion } from '../help/completion.js';
import type { Io } from '../io.js';

const SCRIPTS: Record<string, (commands: CommandModel[]) => string> = { bash: bashCompletion, zsh: zshCompletion, fish: fishCompletion };

/**
 * `splitdance completion bash|zsh|fish` prints the completion script; `--batches` (what the
 * scripts call) prints the store's batch names, one a line. A completion must never disturb the
 * shell: no store, or one that cannot be read, completes nothing; a name that cannot stand on one
 * line (a newline or another control character in it) is left out.
 */
export async function completionCommand(
  shell: string | undefined,
  flags: { batches?: boolean; db?: string },
  commands: CommandModel[],
  io: Io,
): Promise<number> {
  if (flags.batches) {
    try {
      const store = await openForReading(resolveDbPath(flags.db, io.cwd, io.env));
      try {
        for (const b of await store.listBatches()) if (!/[\p{Cc}\u2028\u2029]/u.test(b.name)) io.stdout.write(`${b.name}\n`);
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
