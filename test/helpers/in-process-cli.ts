// Commands called in-process: an Io that keeps what they print, and main() with the argv a shell would give.
import { Writable } from 'node:stream';
import { expect } from 'vitest';
import type { Io } from '../../src/cli/io.js';
import { main } from '../../src/cli/main.js';
import { UsageError } from '../../src/errors.js';

export interface CapturedIo {
  io: Io;
  stdout(): string;
  stderr(): string;
}

/** An Io in `cwd` with an empty environment (no SPLITDANCE_DB, no colours), not a terminal, keeping what is written. */
export function captureIo(cwd: string): CapturedIo {
  const text = { stdout: '', stderr: '' };
  const sink = (name: keyof typeof text) =>
    new Writable({
      write(chunk: Buffer | string, _encoding, done) {
        text[name] += String(chunk);
        done();
      },
    });
  const io: Io = { stdout: sink('stdout'), stderr: sink('stderr'), cwd, env: {}, tty: false, stdoutTty: false };
  return { io, stdout: () => text.stdout, stderr: () => text.stderr };
}

/** `splitdance ARGV` through the one error boundary, in this process: its exit code and what it printed. */
export async function mainIn(cwd: string, argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const c = captureIo(cwd);
  const code = await main(['node', 'splitdance', ...argv], c.io);
  return { code, stdout: c.stdout(), stderr: c.stderr() };
}

/** The UsageError `call` rejects with (classified by name after IPC, so the name is checked too). */
export async function usageErrorOf(call: Promise<unknown>): Promise<UsageError> {
  const err = await call.then(
    () => expect.fail('the command returned instead of throwing a UsageError'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(UsageError);
  expect((err as Error).name).toBe('UsageError');
  return err as UsageError;
}

/** An argv as a shell would show it: empty words quoted. */
export const shown = (argv: string[]) => argv.map((a) => (a === '' || /\s/.test(a) ? `'${a}'` : a)).join(' ');

export interface StartedIn {
  /** The command's end: its exit code and everything it printed. */
  done: Promise<{ code: number; stdout: string; stderr: string }>;
  /** What it printed so far. */
  stdout(): string;
  stderr(): string;
}

/**
 * `splitdance ARGV` started in this process with `env` as its Io's environment: the test goes on
 * while it runs (another command, a look at the store) and awaits `done` later.
 */
export function startIn(cwd: string, argv: string[], env: NodeJS.ProcessEnv = {}): StartedIn {
  const c = captureIo(cwd);
  c.io.env = env;
  const done = main(['node', 'splitdance', ...argv], c.io).then((code) => ({ code, stdout: c.stdout(), stderr: c.stderr() }));
  return { done, stdout: c.stdout, stderr: c.stderr };
}

/** `mainIn` with `env` as the Io's environment (SPLITDANCE_DB, NO_COLOR, …). */
export function mainInEnv(cwd: string, argv: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  return startIn(cwd, argv, env).done;
}

/**
 * Runs `body` with `vars` set in this process's environment, then puts it back as it was. Worker
 * processes inherit this process's environment (not the Io's): what a fixture handler reads
 * (SIDE_EFFECT_LOG, STALL_KEY, …) is set here. Tests in a file run one at a time.
 */
export async function withProcessEnv<T>(vars: Record<string, string>, body: () => Promise<T>): Promise<T> {
  const before = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  try {
    return await body();
  } finally {
    for (const [k, v] of Object.entries(before)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/**
 * Sets `vars` in this process's environment, which the workers a command forks inherit (a
 * fixture handler's SLEEP_MS, a side-effect log); the returned function puts back what was there.
 */
export function setProcessEnv(vars: Record<string, string | undefined>): () => void {
  const before = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  const put = (values: Record<string, string | undefined>) => {
    for (const [k, v] of Object.entries(values)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
  put(vars);
  return () => put(before);
}

/**
 * `splitdance ARGV` in this process as on a terminal (stdout and stderr both, `TERM=xterm-256color`
 * unless `env` says otherwise): its exit code, and stdout then stderr as one text.
 */
export async function mainOnTerminal(cwd: string, argv: string[], env: Record<string, string> = {}): Promise<{ code: number; output: string }> {
  const c = captureIo(cwd);
  Object.assign(c.io, { tty: true, stdoutTty: true, env: { TERM: 'xterm-256color', ...env } });
  const code = await main(['node', 'splitdance', ...argv], c.io);
  return { code, output: c.stdout() + c.stderr() };
}

/** `mainIn` with `vars` in the environment the command's worker processes inherit (see withProcessEnv). */
export function mainInProcessEnv(cwd: string, argv: string[], vars: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return withProcessEnv(vars, () => mainIn(cwd, argv));
}

/** `--json` output of a command that must exit 0, parsed. */
export async function jsonOf<T = unknown>(cwd: string, argv: string[]): Promise<T> {
  const r = await mainIn(cwd, [...argv, '--json']);
  expect(r.code, `${shown(argv)}: ${r.stderr}`).toBe(0);
  return JSON.parse(r.stdout) as T;
}
