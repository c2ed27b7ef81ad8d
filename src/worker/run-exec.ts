import { spawn } from 'node:child_process';
import { closeSync, fstatSync, mkdirSync, openSync, readSync } from 'node:fs';
import { constants } from 'node:os';
import { dirname } from 'node:path';
import { serializeError } from '../errors.js';
import { OutputCapture, TAIL_BYTES } from './output-capture.js';
import { renderTemplate } from './exec-template.js';
import { killGroup } from './kill-group.js';
import type { DoneMessage, TaskMessage } from './protocol.js';
import { directArgv } from './simple-command.js';
import type { Spawner } from './spawner.js';

export interface RunningExec {
  abort(): void;
  done: Promise<Omit<DoneMessage, 'token'>>;
}

/** How a command ended, whichever way it was started. */
interface Ended {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** It never ran (or its fate is unknown): an errno-style code (ENOENT…) and the whole message. */
  spawnError: { code: string; message: string } | null;
  outputTail: string | null;
  logPath: string | null;
}

/** Streams a straggler (a background grandchild holding the pipe) may keep open after exit. */
const PIPE_LINGER_MS = 200;

/**
 * Runs one `--exec` attempt in its own session and process group, so a timeout or shutdown
 * can kill the command and everything it started with one signal. The rendered line runs
 * under `/bin/sh -c`, or directly when it needs no shell (simple-command.ts) — with the
 * same arguments, and a signal death reported as the shell would (exit 128+n). Commands
 * start through the spawner helper when it is built, else with Node's spawn.
 */
export function runExec(
  template: string,
  task: TaskMessage,
  killGraceMs: number,
  vars: Record<string, string>,
  spawner: Spawner | null,
  onSpawned: (pgid: number, viaSpawner: boolean) => void,
): RunningExec {
  const started = Date.now();
  let command: string;
  try {
    command = renderTemplate(template, task);
  } catch (err) {
    // e.g. {inputs.x.y} naming a field the needed stage's result lacks: the attempt fails, nothing runs.
    return notRun(serializeError(err));
  }
  if ([command, ...Object.values(vars)].some((s) => s.includes('\0'))) {
    // Only a stage result can put one there ({inputs…}); no program can receive it, and a retry would not help.
    const message = `the command line holds a NUL byte (from a placeholder's value), which no command can receive: ${JSON.stringify(command).slice(0, 200)}`;
    return notRun({ name: 'Error', message, retryable: false });
  }
  let pgid: number | null = null;
  let aborted = false;
  let killTimer: NodeJS.Timeout | undefined;
  const kill = () => {
    killGroup(pgid!, 'SIGTERM');
    killTimer = setTimeout(() => killGroup(pgid!, 'SIGKILL'), killGraceMs);
  };
  const onStarted: OnStarted = (pid, viaSpawner) => {
    pgid = pid;
    onSpawned(pid, viaSpawner);
    if (aborted) kill();
  };
  const launch = (argv: string[]) =>
    spawner && !spawner.dead ? viaSpawner(spawner, argv, vars, task.logFile, onStarted) : viaNode(argv, vars, task.logFile, onStarted);

  const done = (async (): Promise<Omit<DoneMessage, 'token'>> => {
    const direct = directArgv(command);
    let ended = await launch(direct ?? ['/bin/sh', '-c', command]);
    if (ended.spawnError?.code === SPAWNER_DIED) {
      // Whether it started is unknown, so it is never started again here; a group we know of is killed.
      if (pgid !== null) killGroup(pgid, 'SIGKILL');
    } else if (direct && ended.spawnError) {
      // Not found, not executable, a script without #!: the shell's own handling and message.
      ended = await launch(['/bin/sh', '-c', command]);
    }
    else if (direct && ended.signal && !aborted) ended = { ...ended, code: 128 + constants.signals[ended.signal], signal: null };
    clearTimeout(killTimer);
    const { code, signal, spawnError, outputTail, logPath } = ended;
    const ok = !spawnError && code === 0;
    return {
      ok,
      result: null,
      error: ok ? null : { name: 'Error', message: describeExit(code, signal, spawnError, outputTail), retryable: true },
      exitCode: code,
      signal,
      outputTail,
      logPath,
      durationMs: Date.now() - started,
    };
  })();

  return {
    abort() {
      aborted = true;
      if (pgid !== null) kill();
    },
    done,
  };
}

/** An attempt that fails before anything runs. */
function notRun(error: NonNullable<DoneMessage['error']>): RunningExec {
  const failed = { ok: false, result: null, error, exitCode: null, signal: null, outputTail: null, logPath: null, durationMs: 0 };
  return { abort() {}, done: Promise.resolve(failed) };
}

type OnStarted = (pid: number, viaSpawner: boolean) => void;

const SPAWNER_DIED = 'ESPAWNER';
const SIGNAL_NAMES = new Map(Object.entries(constants.signals).map(([name, n]) => [n, name as NodeJS.Signals]));
const madeDirs = new Set<string>();

async function viaSpawner(
  spawner: Spawner,
  argv: string[],
  vars: Record<string, string>,
  logFile: string,
  onStarted: OnStarted,
): Promise<Ended> {
  const dir = dirname(logFile);
  if (!madeDirs.has(dir)) {
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      madeDirs.add(dir);
    } catch {
      return viaNode(argv, vars, logFile, onStarted); // it keeps the output tail without a log
    }
  }
  const end = await spawner.run(argv, vars, logFile, (pid) => onStarted(pid, true));
  switch (end.kind) {
    case 'exited': {
      const signo = end.status & 0x7f;
      const name = signo ? (SIGNAL_NAMES.get(signo) ?? null) : null;
      const written = end.written > 0;
      return {
        // A signal Node has no name for (real-time ones) is reported as the shell would: 128+n.
        code: signo ? (name ? null : 128 + signo) : (end.status >> 8) & 0xff,
        signal: name,
        spawnError: null,
        outputTail: written ? readTail(logFile, end.written) : null,
        logPath: written ? logFile : null,
      };
    }
    case 'spawn-failed': {
      const code = Object.entries(constants.errno).find(([, n]) => n === end.errno)?.[0] ?? `errno ${end.errno}`;
      return { code: null, signal: null, spawnError: { code, message: `could not start ${argv[0]}: spawn ${argv[0]} ${code}` }, outputTail: null, logPath: null };
    }
    case 'log-failed':
      return viaNode(argv, vars, logFile, onStarted); // it keeps the output tail without a log
    case 'spawner-died': {
      // Its signal is the attempt's: the command's own end is unknown (the helper was its parent).
      const message = end.signal ? `the spawner helper was killed by ${end.signal} while the command ran` : 'the spawner helper died while the command ran';
      return { code: null, signal: end.signal, spawnError: { code: SPAWNER_DIED, message }, outputTail: null, logPath: null };
    }
  }
}

/** The last bytes (at most TAIL_BYTES) of the `written` the command appended to its log. */
function readTail(logFile: string, written: number): string | null {
  try {
    const fd = openSync(logFile, 'r');
    try {
      const size = fstatSync(fd).size;
      const n = Math.min(TAIL_BYTES, written, size);
      const buf = Buffer.alloc(n);
      readSync(fd, buf, 0, n, size - n);
      return buf.toString('utf8');
    } finally {
      closeSync(fd);
    }
  } catch {
    return null;
  }
}

function viaNode(argv: string[], vars: Record<string, string>, logFile: string, onStarted: OnStarted): Promise<Ended> {
  const capture = new OutputCapture(logFile);
  const child = spawn(argv[0]!, argv.slice(1), { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...vars } });
  if (child.pid !== undefined) onStarted(child.pid, false);
  child.stdout.on('data', (b: Buffer) => capture.write(b));
  child.stderr.on('data', (b: Buffer) => capture.write(b));
  return new Promise<Ended>((resolve) => {
    let exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
    let spawnError: NodeJS.ErrnoException | null = null;
    const finish = () => {
      const { outputTail, logPath } = capture.finish();
      const error = spawnError ? { code: spawnError.code ?? 'ERROR', message: `could not start ${argv[0]}: ${spawnError.message}` } : null;
      resolve({ code: exit?.code ?? null, signal: exit?.signal ?? null, spawnError: error, outputTail, logPath });
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
}

function describeExit(code: number | null, signal: string | null, spawnError: { message: string } | null, tail: string | null): string {
  if (spawnError) return spawnError.message;
  const what = signal ? `killed by ${signal}` : `exit code ${code}`;
  const lastLine = tail?.trimEnd().split('\n').pop()?.trim();
  return lastLine ? `${what}: ${lastLine.slice(0, 300)}` : what;
}
