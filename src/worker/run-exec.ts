import { spawn } from 'node:child_process';
import { serializeError } from '../errors.js';
import { OutputCapture } from './output-capture.js';
import { renderTemplate } from './exec-template.js';
import { killGroup } from './kill-group.js';
import type { DoneMessage, TaskMessage } from './protocol.js';

export interface RunningExec {
  pgid: number | null;
  abort(): void;
  done: Promise<Omit<DoneMessage, 'token'>>;
}

/** Streams a straggler (a background grandchild holding the pipe) may keep open after exit. */
const PIPE_LINGER_MS = 200;

/**
 * Runs one `--exec` attempt in its own process group (`detached`), so a timeout or
 * shutdown can kill the shell and everything it started with one signal.
 */
export function runExec(template: string, task: TaskMessage, killGraceMs: number, env: NodeJS.ProcessEnv): RunningExec {
  const started = Date.now();
  let command: string;
  try {
    command = renderTemplate(template, task);
  } catch (err) {
    // e.g. {inputs.x.y} naming a field the needed stage's result lacks: the attempt fails, nothing runs.
    const error = serializeError(err);
    const failed = { ok: false, result: null, error, exitCode: null, signal: null, outputTail: null, logPath: null, durationMs: 0 };
    return { pgid: null, abort() {}, done: Promise.resolve(failed) };
  }
  const capture = new OutputCapture(task.logFile);
  const child = spawn('/bin/sh', ['-c', command], {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env,
  });
  const pgid = child.pid ?? null;
  let killTimer: NodeJS.Timeout | undefined;
  child.stdout.on('data', (b: Buffer) => capture.write(b));
  child.stderr.on('data', (b: Buffer) => capture.write(b));

  const done = new Promise<Omit<DoneMessage, 'token'>>((resolve) => {
    let exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
    let spawnError: Error | null = null;
    const finish = () => {
      clearTimeout(killTimer);
      const { outputTail, logPath } = capture.finish();
      const code = exit?.code ?? null;
      const signal = exit?.signal ?? null;
      const ok = !spawnError && code === 0;
      resolve({
        ok,
        result: null,
        error: ok ? null : { name: 'Error', message: describeExit(code, signal, spawnError, outputTail), retryable: true },
        exitCode: code,
        signal,
        outputTail,
        logPath,
        durationMs: Date.now() - started,
      });
    };
    child.on('error', (err) => {
      spawnError = err;
      finish();
    });
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
      }, PIPE_LINGER_MS).unref();
    });
    child.on('close', () => finish());
  });

  return {
    pgid,
    abort() {
      if (pgid === null) return;
      killGroup(pgid, 'SIGTERM');
      killTimer = setTimeout(() => killGroup(pgid, 'SIGKILL'), killGraceMs);
    },
    done,
  };
}

function describeExit(code: number | null, signal: string | null, spawnError: Error | null, tail: string | null): string {
  if (spawnError) return `could not start /bin/sh: ${spawnError.message}`;
  const what = signal ? `killed by ${signal}` : `exit code ${code}`;
  const lastLine = tail?.trimEnd().split('\n').pop()?.trim();
  return lastLine ? `${what}: ${lastLine.slice(0, 300)}` : what;
}
