import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '../..');
export const BIN = join(ROOT, 'bin/splitdance.js');
export const FIXTURES = join(ROOT, 'fixtures');
export const handler = (name: string) => join(FIXTURES, 'handlers', `${name}.mjs`);

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  cwd: string;
  env?: NodeJS.ProcessEnv;
  /** Replace the environment entirely (like `env -i`). */
  cleanEnv?: boolean;
  timeoutMs?: number;
  /** Written to the command's stdin, which is then closed (else stdin is /dev/null). */
  input?: string | Buffer;
  /** A command the CLI runs under (`sh -c '…; exec "$@"' sh`): the CLI is its last arguments. */
  under?: string[];
  /** In a process group of its own, so `process.kill(-pid)` takes its group, never the test's. */
  detached?: boolean;
}

/** A fresh temp directory (real path, so keys and paths compare exactly). */
export function tempDir(prefix = 'sd-'): string {
  return realpathSync(mkdtempSync(join(tmpdir(), prefix)));
}

/** Starts the built CLI as a real process. */
export function startCli(args: string[], opts: CliOptions): ChildProcess & { result: Promise<CliResult> } {
  const env = opts.cleanEnv ? { ...opts.env } : { ...process.env, NO_COLOR: '1', ...opts.env };
  const [command, ...before] = [...(opts.under ?? []), process.execPath];
  const child = spawn(command!, [...before, BIN, ...args], { cwd: opts.cwd, env, stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'], detached: opts.detached });
  if (opts.input !== undefined) {
    child.stdin!.on('error', () => {}); // a CLI that exits without reading all of it
    child.stdin!.end(opts.input);
  }
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (b) => (stdout += b));
  child.stderr!.on('data', (b) => (stderr += b));
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 50_000);
  const result = new Promise<CliResult>((done) =>
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      done({ code, signal, stdout, stderr });
    }),
  );
  return Object.assign(child, { result });
}

export function runCli(args: string[], opts: CliOptions): Promise<CliResult> {
  return startCli(args, opts).result;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function waitFor(check: () => boolean, timeoutMs = 10_000, what = 'condition'): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}
