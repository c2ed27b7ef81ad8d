import { failpointBug } from '../store/failpoint.js';
import { EXIT } from '../exit-codes.js';
import { printable } from '../printable.js';
import { processIo, type Io } from './io.js';
import { hideStoreSecrets } from './process-secrets.js';
import { packageVersion } from './version.js';
import { describeLoss, lostStreams } from './lost-output.js';
import { splitArgGroups } from './arg-groups.js';

/**
 * `splitdance --version` (or `-V`) alone is answered before commander and the program's
 * definitions load: half of its start-up was theirs (docs/benchmarks.md).
 */
const VERSION_ONLY = new Set(['--version', '-V']);

/**
 * The one error boundary: every command returns its exit code, and every error is
 * mapped to one here (also what escapes it: see `reportBug`). UsageError → 2, StoreError and ResourceError → 4, anything else is a bug (70, never 1:
 * a script must not read a crash of splitdance as "tasks failed"). Stack traces only with --verbose.
 */
export async function main(argv: string[], given?: Io): Promise<number> {
  const io = given ?? processIo(hideStoreSecrets(argv));
  const verbose = argv.includes('--verbose');
  let code: number = EXIT.OK;
  try {
    failpointBug('bug');
    if (argv.length === 3 && VERSION_ONLY.has(argv[2]!)) {
      io.stdout.write(`${packageVersion()}\n`);
      return code;
    }
    const { buildProgram } = await import('./program.js');
    const { argv: options, groups } = splitArgGroups(argv);
    await buildProgram(io, (c) => (code = c), groups).parseAsync(options);
    noteLostOutput(io);
    return code;
  } catch (err) {
    return report(err, io, verbose);
  }
}

function report(err: unknown, io: Io, verbose: boolean): number {
  // commander's errors (CommanderError and InvalidArgumentError), told apart without loading it.
  const parsing = err as { code?: unknown; exitCode?: unknown } | null;
  if (typeof parsing?.code === 'string' && parsing.code.startsWith('commander.')) {
    // commander has printed its own message already
    return parsing.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
  }
  const e = err instanceof Error ? err : new Error(String(err));
  const code = e.name === 'UsageError' ? EXIT.USAGE : e.name === 'StoreError' || e.name === 'ResourceError' ? EXIT.STORE : EXIT.INTERNAL;
  if (code === EXIT.INTERNAL) return reportBug(e, io, verbose);
  // Messages quote names and errors from the store and the disk: escaped like every human line.
  io.stderr.write(`splitdance: error: ${printable(e.message, { lines: true })}\n`);
  if (verbose && e.stack) io.stderr.write(`${e.stack}\n`);
  return code;
}

/** A batch command that lost its stdout ran to its end anyway; say so where a person can still read. */
function noteLostOutput(io: Io): void {
  const lost = lostStreams();
  const err = lost.get('stdout');
  if (err && !lost.has('stderr')) io.stderr.write(`splitdance: ${describeLoss('stdout', err)}; the rest of its output was discarded, the batch ran on\n`);
}

/**
 * An error that is neither bad input nor the store: a bug in splitdance (exit 70), said as such.
 * Also what `bin/splitdance.js` calls for an error that escapes `main`.
 * @public
 */
export function reportBug(err: unknown, io: Pick<Io, 'stderr'>, verbose: boolean): number {
  const e = err instanceof Error ? err : new Error(String(err));
  io.stderr.write(`splitdance: unexpected error (a bug in splitdance, exit 70): ${printable(e.message, { lines: true })}\n`);
  if (verbose && e.stack) io.stderr.write(`${e.stack}\n`);
  else io.stderr.write('please report it with the output of the same command run again with --verbose (it adds the stack trace)\n');
  return EXIT.INTERNAL;
}
