import { createReadStream } from 'node:fs';
import { Transform } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { UsageError } from '../../errors.js';
import { parseCount } from '../../job/units.js';
import { attemptLogPlaces, openLogForReading } from '../../store/log-layout.js';
import { logRoot, resolveDbPath } from '../../store/open-store.js';
import { printable } from '../format.js';
import { line, type Io, type OutputFlags } from '../io.js';
import { suggest } from '../suggest.js';
import { defaultedNote, withBatch } from '../with-store.js';
import { findTask } from './show.js';

export interface LogsFlags extends OutputFlags {
  db?: string;
  batch?: string;
  attempt?: string;
}

/**
 * `splitdance logs <key>`: the full captured output of the last attempt, or of `--attempt N`.
 * Piped or redirected, the bytes are exact; on a terminal, control characters are shown
 * escaped (lines and tabs kept), since the output of a task is data, not terminal commands.
 * The file read is the one this store's layout names for that attempt, never another
 * store's file that happens to have the same name.
 */
export async function logsCommand(key: string, flags: LogsFlags, io: Io): Promise<number> {
  // The output is the task's bytes as they were: there is no JSON of it to give (show --json has the tail).
  if (flags.json) throw new UsageError('logs has no --json: it prints the output as the task wrote it; `show --json KEY` gives each attempt with its output tail and log path');
  const n = flags.attempt === undefined ? null : parseCount(flags.attempt, '--attempt', { min: 1 });
  return withBatch(
    flags,
    io,
    async (store, batch, { target, defaulted }) => {
      if (defaulted && !flags.quiet) line(io.stderr, defaultedNote(batch.name));
      const { attempts } = await findTask(store, batch, key, target);
      const shown = printable(key);
      if (attempts.length === 0) throw new UsageError(`task "${shown}" has not been attempted yet`);
      const attempt = n === null ? attempts[attempts.length - 1]! : [...attempts].reverse().find((a) => a.attempt === n);
      if (!attempt) throw new UsageError(`task "${shown}" has no attempt ${n}; \`${suggest(target, ['show'], key)}\` lists its attempts`);
      if (!attempt.logPath) {
        line(io.stderr, `attempt ${attempt.attempt} of ${shown} printed nothing`);
        return 0;
      }
      const root = logRoot(resolveDbPath(flags.db, io.cwd, io.env), io.cwd);
      const places = attemptLogPlaces(root, store.identity, batch.name, attempt.id, attempt.logPath);
      let fd: number | null = null;
      for (const place of places) fd ??= openLogForReading(place);
      if (fd === null && !places.includes(attempt.logPath)) {
        // Recorded by a splitdance from before store identities: the file at that path may be another store's.
        throw new UsageError(
          `the log of attempt ${attempt.attempt} was recorded at ${printable(attempt.logPath)}, outside this store's log folder; it is not shown, as it may be another store's`,
        );
      }
      if (fd === null) throw new UsageError(`the log ${printable(attempt.logPath)} is gone (pruned or deleted)`);
      await new Promise<void>((resolve, reject) => {
        const file = createReadStream('', { fd }); // closes the fd when done
        file.on('error', reject);
        const terminal = (io.stdout as NodeJS.WriteStream).isTTY === true;
        const text = terminal ? file.pipe(escapeForTerminal()) : file;
        text.on('end', () => resolve());
        text.pipe(io.stdout, { end: false });
      });
      return 0;
    },
    { readonly: true },
  );
}

/** Output bytes → text with control characters escaped; a character split across chunks is kept whole. */
function escapeForTerminal(): Transform {
  const decoder = new StringDecoder('utf8');
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      done(null, printable(decoder.write(chunk), { lines: true }));
    },
    flush(done) {
      done(null, printable(decoder.end(), { lines: true }));
    },
  });
}
