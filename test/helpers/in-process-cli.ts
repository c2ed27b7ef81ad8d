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

/**
 * Sets `vars` in this process's environment, which the worker processes and commands a
 * command starts inherit (a handler's SIDE_EFFECT_LOG, a mark to find them by); returns the
 * function that puts back what was there. Call it in afterEach, or in a finally.
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
