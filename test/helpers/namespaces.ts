import { spawn, type ChildProcess } from 'node:child_process';
import { BIN, type CliResult } from './cli.js';

/**
 * The built CLI as pid 1 of a fresh PID namespace with its own /proc (`child` is `unshare`):
 * one of two containers with host networking sharing a volume. Same hostname and boot id as
 * every other run here, pids that mean nothing across the boundary. Needs root.
 */
export function runInNamespace(args: string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<CliResult> & { child: ChildProcess } {
  const child = spawn('unshare', ['--pid', '--fork', '--mount-proc', process.execPath, BIN, ...args], {
    cwd,
    env: { ...process.env, NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b) => (stdout += b));
  child.stderr.on('data', (b) => (stderr += b));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const result = new Promise<CliResult>((done) =>
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      done({ code, signal, stdout, stderr });
    }),
  );
  return Object.assign(result, { child });
}
