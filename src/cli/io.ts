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

/**
 * Colours for text written to `stream`. `--color=always` (or `--color`) colours whatever the
 * stream is (for `less -R`, `watch --color`); `--color=never` and `--no-color` never. Otherwise
 * (`auto`): only on a terminal that is not `TERM=dumb`, and not with a non-empty NO_COLOR
 * (no-color.org: an empty value means unset).
 */
export function colors(io: Io, flags: OutputFlags, stream: 'stdout' | 'stderr' = 'stderr'): ChalkInstance {
  if (flags.color === true || flags.color === 'always') return new Chalk({ level: 1 });
  const off = flags.color === false || flags.color === 'never' || (io.env.NO_COLOR !== undefined && io.env.NO_COLOR !== '') || !liveTerminal(io, stream);
  return new Chalk({ level: off ? 0 : 1 });
}

export function line(stream: NodeJS.WritableStream, text: string): void {
  stream.write(`${text}\n`);
}
