import { spawn } from 'node:child_process';
import { BIN } from './cli.js';

/** One argument for `/bin/sh`, quoted so it arrives exactly as given. */
const shellQuote = (arg: string): string => `'${arg.replace(/'/g, `'\\''`)}'`;

/** The test's environment without the variables that would decide colours for the CLI. */
function envWithoutColorHints(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, TERM: 'xterm-256color', ...extra };
  for (const name of ['NO_COLOR', 'FORCE_COLOR']) if (!(name in extra)) delete env[name];
  return env;
}

export interface PtyResult {
  code: number | null;
  /** Everything the command wrote to the terminal (stdout and stderr interleaved, `\r\n` line ends). */
  output: string;
}

/**
 * Runs the built CLI on a pseudo-terminal through util-linux `script`, the way a person at a
 * terminal would. `shellSuffix` is appended to the command line as is (e.g. `| cat`, `> out.txt`),
 * so a test can give the CLI a terminal on one stream and a pipe or a file on the other.
 */
export function runInPty(
  args: string[],
  opts: {
    cwd: string;
    env?: NodeJS.ProcessEnv;
    shellSuffix?: string;
    timeoutMs?: number;
    /** Keys typed on the terminal once the output so far satisfies `when`. */
    type?: { when: (output: string) => boolean; text: string };
    /** The terminal's width (`stty cols`); else whatever `script` gives (no size: programs assume 80). */
    columns?: number;
    /** The terminal resized to this width once the file `once` exists (the command gets SIGWINCH). */
    resize?: { columns: number; once: string };
  },
): Promise<PtyResult> {
  const resize = opts.resize
    ? `(while [ ! -e ${shellQuote(opts.resize.once)} ]; do sleep 0.05; done; stty cols ${opts.resize.columns} < /dev/tty) & `
    : '';
  const size = (opts.columns ? `stty cols ${opts.columns} rows 40 || exit 9; ` : '') + resize;
  const command = size + [process.execPath, BIN, ...args].map(shellQuote).join(' ') + (opts.shellSuffix ? ` ${opts.shellSuffix}` : '');
  // -e: the exit status of the command; -c: run it instead of a shell; /dev/null: no typescript file.
  const child = spawn('script', ['-qec', command, '/dev/null'], {
    cwd: opts.cwd,
    env: envWithoutColorHints(opts.env),
    stdio: [opts.type ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let typed = false;
  child.stdout!.on('data', (b) => {
    output += b;
    if (opts.type && !typed && opts.type.when(output)) {
      typed = true;
      child.stdin!.write(opts.type.text);
    }
  });
  child.stderr!.on('data', (b) => (output += b));
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 50_000);
  return new Promise((done, fail) => {
    child.on('error', (err) => fail(new Error(`cannot start util-linux \`script\` for a pseudo-terminal: ${err.message}`)));
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, output });
    });
  });
}

/** An SGR escape (colour, bold): what chalk writes. */
export const SGR = /\x1b\[[0-9;]*m/; // eslint-disable-line no-control-regex
/** Any control character other than tab and newline. */
export const CONTROL = /[\x00-\x08\x0b-\x1f\x7f]/; // eslint-disable-line no-control-regex

/** What a person reads: the terminal's lines with colours, cursor codes and redrawn bar frames taken out. */
export function screenLines(output: string): string[] {
  // A move to column 1 (`ESC[1G`) starts the line over, like a carriage return.
  // eslint-disable-next-line no-control-regex
  const plain = output.replace(/\x1b\[1?G/g, '\r').replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '');
  return plain
    .split('\n')
    .map((l) => l.split('\r').filter((part) => part.trim() !== '').pop() ?? '')
    .filter((l) => l.trim() !== '');
}
