// Not open-store.js: every command, --version too, loads this at start, and that loads the SQLite driver.
import { describeStore } from '../store/describe-store.js';

/**
 * Keeps a store password out of what other processes can read, where a process can (see
 * docs/trust-model.md): the process list shows the redacted command line once this has run,
 * and SPLITDANCE_DB, when it holds a password, is taken out of the environment that worker
 * processes and handlers inherit. Returns the environment the command itself reads (with
 * SPLITDANCE_DB). Only for the real process: tests that call main() in-process keep theirs.
 */
export function hideStoreSecrets(argv: string[]): NodeJS.ProcessEnv {
  const shown = argv.map(redactArg);
  // A title no longer than the original fits the space of the original arguments on Linux.
  if (shown.some((a, i) => a !== argv[i])) process.title = [process.argv0, ...shown.slice(1)].join(' ');
  const env = { ...process.env };
  const db = process.env.SPLITDANCE_DB;
  if (db !== undefined && describeStore(db.trim()) !== db.trim()) delete process.env.SPLITDANCE_DB;
  return env;
}

function redactArg(arg: string): string {
  const eq = arg.indexOf('=');
  if (arg.startsWith('--') && eq > 0) return `${arg.slice(0, eq + 1)}${describeStore(arg.slice(eq + 1))}`;
  return describeStore(arg);
}
