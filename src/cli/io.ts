import { Chalk, type ChalkInstance } from 'chalk';

/** Where a command writes, so commands run the same from the CLI and from tests. */
export interface Io {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** stderr is a terminal: progress bar and colours are allowed. */
  tty: boolean;
}

export function processIo(): Io {
  // A reader that goes away (`splitdance tasks | head`) is not an error worth a stack trace.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
      throw err;
    });
  }
  return { stdout: process.stdout, stderr: process.stderr, cwd: process.cwd(), env: process.env, tty: Boolean(process.stderr.isTTY) };
}

export interface OutputFlags {
  json?: boolean;
  quiet?: boolean;
  verbose?: boolean;
  color?: boolean;
}

export function colors(io: Io, flags: OutputFlags): ChalkInstance {
  const off = flags.color === false || io.env.NO_COLOR !== undefined || !io.tty;
  return new Chalk({ level: off ? 0 : 1 });
}

export function line(stream: NodeJS.WritableStream, text: string): void {
  stream.write(`${text}\n`);
}
