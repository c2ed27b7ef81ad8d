/**
 * What a write error on the process's own stdout or stderr means: a reader that went away
 * (`run --json | head -1`, EPIPE), a full disk (`>> /var/log/x.log` on a full /var, ENOSPC),
 * a terminal that closed (EIO).
 *
 * A command that only reads (`status`, `tasks`, `watch`) stops at once: EPIPE quietly with the
 * code it has so far (`tasks | head` is not an error), anything else with one line and exit 1,
 * since what it was asked to print never arrived. A command that runs a batch (`run`,
 * `worker`, `retry-failed --run`) keeps working with its output discarded: ending it would leave
 * tasks RUNNING and PENDING behind an exit code that says nothing about them, and its exit code
 * stays the batch's verdict, which is what a script reads.
 */

type StreamName = 'stdout' | 'stderr';

let keepWorking = false;
const lost = new Map<StreamName, NodeJS.ErrnoException>();

/** Called by the commands that run a batch: a lost stream no longer ends the process. */
export function keepWorkingWithoutOutput(): void {
  keepWorking = true;
}

/** The first write error of each stream that failed, for the closing note. */
export function lostStreams(): ReadonlyMap<StreamName, NodeJS.ErrnoException> {
  return lost;
}

/** Installs the handlers on the process's own streams (once, from processIo). */
export function guardProcessStreams(): void {
  for (const name of ['stdout', 'stderr'] as const) {
    const stream = process[name];
    stream.on('error', (err: NodeJS.ErrnoException) => onWriteError(name, err));
  }
}

function onWriteError(name: StreamName, err: NodeJS.ErrnoException): void {
  if (!lost.has(name)) lost.set(name, err);
  // The stream is destroyed now; later writes to it are dropped without another event.
  if (keepWorking) return;
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  if (name === 'stdout' && !lost.has('stderr')) process.stderr.write(`splitdance: error: ${describeLoss(name, err)}\n`);
  process.exit(1);
}

export function describeLoss(name: StreamName, err: NodeJS.ErrnoException): string {
  const why = err.code === 'EPIPE' ? 'its reader closed it' : err.code === 'ENOSPC' ? 'no space left on its device' : (err.code ?? err.message);
  return `cannot write to ${name} (${why})`;
}
