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
