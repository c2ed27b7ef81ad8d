import { Chalk, type ChalkInstance } from 'chalk';
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
  color?: boolean;
}

/**
 * Colours for text written to `stream`: only when that stream is a terminal, and not with
 * --no-color or a non-empty NO_COLOR (no-color.org: an empty value means unset).
 */
export function colors(io: Io, flags: OutputFlags, stream: 'stdout' | 'stderr' = 'stderr'): ChalkInstance {
  const terminal = stream === 'stdout' ? io.stdoutTty : io.tty;
  const off = flags.color === false || (io.env.NO_COLOR !== undefined && io.env.NO_COLOR !== '') || !terminal;
  return new Chalk({ level: off ? 0 : 1 });
}

export function line(stream: NodeJS.WritableStream, text: string): void {
  stream.write(`${text}\n`);
}
