import { guardProcessStreams } from './lost-output.js';

/** Where a command writes, so commands run the same from the CLI and from tests. */
export interface Io {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** stderr is a terminal: the progress bar and colours in human text on stderr are allowed. */
  tty: boolean;
  /** stdout is a terminal: what a command prints there (status, show, tasks) may be coloured or a table. */
  stdoutTty: boolean;
}

export function processIo(env: NodeJS.ProcessEnv = process.env): Io {
  guardProcessStreams(); // a closed or full stdout/stderr: lost-output.ts
  return { stdout: process.stdout, stderr: process.stderr, cwd: process.cwd(), env, tty: Boolean(process.stderr.isTTY), stdoutTty: Boolean(process.stdout.isTTY) };
}

export interface OutputFlags {
  json?: boolean;
  quiet?: boolean;
  verbose?: boolean;
  /** `--color[=always|never|auto]` (true: `--color` alone, always) or `--no-color` (false). */
  color?: boolean | 'always' | 'never' | 'auto';
}

/**
 * Whether `stream` is a terminal that takes cursor movement: a bar, a view redrawn in place.
 * `TERM=dumb` (Emacs shells, some CI consoles) is a terminal that does not.
 */
export function liveTerminal(io: Io, stream: 'stdout' | 'stderr'): boolean {
  return (stream === 'stdout' ? io.stdoutTty : io.tty) && io.env.TERM !== 'dumb';
}

export function line(stream: NodeJS.WritableStream, text: string): void {
  stream.write(`${text}\n`);
}

/**
 * Writes `text` and, when the stream's buffer is full, waits for it to drain: a command that
 * streams a listing goes at its reader's pace, holding a page in memory, not the whole output.
 */
export async function write(stream: NodeJS.WritableStream, text: string): Promise<void> {
  if (!stream.write(text)) await drained(stream);
}

/** Until a full stream takes writes again, or fails or closes (then there is nothing to wait for). */
export function drained(stream: NodeJS.WritableStream): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      stream.off('drain', done);
      stream.off('close', done);
      stream.off('error', done);
      resolve();
    };
    stream.on('drain', done);
    stream.on('close', done);
    stream.on('error', done);
  });
}
