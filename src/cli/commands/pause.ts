import { printable } from '../format.js';
import { line, type Io, type OutputFlags } from '../io.js';
import { commandLineFor } from '../suggested-commands.js';
import { withBatch } from '../with-store.js';

export interface PauseFlags extends OutputFlags {
  db?: string;
  trustStoreOwner?: string[];
  batch?: string;
}

/**
 * `splitdance pause` / `resume`: a paused batch is not claimed from — running coordinators
 * stop claiming within a second, let their running attempts finish and exit 3; `run` and
 * `worker` leave it alone until it is resumed.
 */
export async function setPausedCommand(paused: boolean, flags: PauseFlags, io: Io): Promise<number> {
  return withBatch(flags, io, async (store, batch, { target }) => {
    await store.setPaused(batch.id, paused);
    if (flags.json) line(io.stdout, JSON.stringify({ batch: batch.name, paused }));
    else if (!flags.quiet) {
      const name = printable(batch.name);
      line(
        io.stderr,
        paused
          ? `batch ${name} paused: running attempts finish, nothing new starts; \`${commandLineFor(target, ['resume'])}\` continues it`
          : `batch ${name} resumed: \`${commandLineFor(target, ['run'], batch.source)}\` or \`${commandLineFor(target, ['worker'])}\` continues it`,
      );
    }
    return 0;
  });
}
