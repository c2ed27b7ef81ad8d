/**
 * commander's own errors (unknown option, missing argument, unknown command) in splitdance's
 * words: the same `splitdance: error:` prefix as every other error, and a hint that helps. A
 * flag that GNU parallel, xargs, rush or pueue users type gets its spelling here rather than
 * commander's nearest name (`--halt` is not a typo of `--help`).
 */
/** `run *.log`: the shell's glob gave run many paths; run takes one source. */
const MANY_SOURCES =
  "a glob such as *.log gives run many paths; run takes one source: write\n" +
  "run . --include '*.log', or run --exec 'CMD {}' ::: *.log";

const PEER_FLAGS: Record<string, string> = {
  '--halt': "GNU parallel's --halt is --max-failures N or P% here; running attempts finish",
  '--joblog': 'the store is the job log: splitdance tasks, show KEY and logs KEY read it',
  '--resume': 'run the same command again: finished tasks are not repeated',
  '--resume-failed': 'splitdance retry-failed --run gives FAILED tasks a fresh budget and runs them',
  '--retry-failed': 'splitdance retry-failed --run gives FAILED tasks a fresh budget and runs them',
  '--bar': 'a progress bar shows by itself on a terminal; splitdance watch follows a batch from anywhere',
  '--eta': 'a progress bar with the ETA shows by itself on a terminal; splitdance status prints it',
  '--progress': 'a progress bar shows by itself on a terminal; --progress-interval paces the lines without one',
  '--max-procs': 'xargs --max-procs is -j N (or --jobs N, -P N) here',
  '--ungroup': '--line-buffer prints each line of the output as it comes, whole, never mixed with another',
  '--sshlogin': 'no ssh here: share a PostgreSQL store (--db postgres://…) and run splitdance worker on each machine',
  '-S': 'no ssh here: share a PostgreSQL store (--db postgres://…) and run splitdance worker on each machine',
  '--dryrun': 'did you mean --dry-run?',
};

/** The message commander wrote, rewritten: one prefix, and a hint for a flag of another tool. */
export function usageError(text: string): string {
  let out = text.replace(/^error: /, 'splitdance: error: ');
  const unknown = /unknown option '([^']*)'/.exec(out)?.[1];
  if (unknown !== undefined) {
    const flag = unknown.split('=')[0]!;
    const peer = PEER_FLAGS[flag];
    // commander offers the nearest name, which for a short word is often just --help.
    out = out.replace(/\n\(Did you mean (--?[\w-]+)\?\)/, (whole, near: string) => (peer || near === '--help' ? '' : whole));
    if (peer) out = out.replace(/\n?$/, `\n(${peer})\n`);
  }
  if (/too many arguments for 'run'/.test(out)) out = out.replace(/\n?$/, `\n(${MANY_SOURCES})\n`);
  return out;
}
