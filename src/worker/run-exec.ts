import { spawn } from 'node:child_process';
import { closeSync, fstatSync, mkdirSync, openSync, readSync } from 'node:fs';
import { constants } from 'node:os';
import { dirname } from 'node:path';
import { serializeError } from '../errors.js';
import { OutputCapture, TAIL_BYTES, tailWithNote } from './output-capture.js';
import { renderExec, type ExecCommand } from './exec-command.js';
import { GroupStop } from './group-stop.js';
import { logSpaceLow } from './log-space.js';
import type { DoneMessage, TaskMessage } from './protocol.js';
import type { Spawner } from './spawner.js';

export interface RunningExec {
  /** TERM its process group, KILL after the grace. */
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
  /** Why its output has no log or only part of one (a full disk): shown after the tail, and with a failure. */
  note?: string | null;
  /** Something that may explain a failure besides the command itself (its log's disk was full). */
  cause?: string;
}

/** Streams a straggler (a background grandchild holding the pipe) may keep open after exit. */
const PIPE_LINGER_MS = 200;

/**
 * Runs one `--exec` attempt in its own session and process group, so a timeout or shutdown
 * can kill the command and everything it started with one signal, and its end can stop
 * whatever it left behind (only a `setsid` daemon escapes the group). The template renders
 * to a shell line run under `/bin/sh -c`, or to an argv run directly when it needs no shell
 * (exec-command.ts) — the same arguments, and a signal death reported as the shell would
 * (exit 128+n). Commands start through the spawner helper when it is built, else with
 * Node's spawn.
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
  let exec: ExecCommand;
  try {
    exec = renderExec(template, task);
  } catch (err) {
    // e.g. {inputs.x.y} naming a field the needed stage's result lacks: the attempt fails, nothing runs.
    return notRun(serializeError(err));
  }
  const command = exec.fallback ?? exec.argv[2]!;
  if ([...exec.argv, ...Object.values(vars)].some((s) => s.includes('\0'))) {
    // Only a stage result can put one there ({inputs…}); no program can receive it, and a retry would not help.
    const message = `the command line holds a NUL byte (from a placeholder's value), which no command can receive: ${JSON.stringify(command).slice(0, 200)}`;
    return notRun({ name: 'Error', message, retryable: false });
  }
  let group: GroupStop | null = null;
  let aborted = false;
  const onStarted: OnStarted = (pid, viaSpawner) => {
    group = new GroupStop(pid, killGraceMs);
    onSpawned(pid, viaSpawner);
    if (aborted) group.begin();
  };
  const launch = (argv: string[]) =>
    spawner && !spawner.dead ? viaSpawner(spawner, argv, vars, task.logFile, onStarted) : viaNode(argv, vars, task.logFile, onStarted);

  const done = (async (): Promise<Omit<DoneMessage, 'token'>> => {
    const direct = exec.fallback !== null;
    let ended = await launch(exec.argv);
    if (ended.spawnError?.code === SPAWNER_DIED) {
      // Whether it started is unknown, so it is never started again here; a group we know of is killed.
      (group as GroupStop | null)?.kill();
    } else if (direct && ended.spawnError) {
      // Not found, not executable, a script without #!: the shell's own handling and message.
      ended = await launch(['/bin/sh', '-c', command]);
    }
    else if (direct && ended.signal && !aborted) ended = { ...ended, code: 128 + constants.signals[ended.signal], signal: null };
    // The attempt is over only once its group is: what the command left running (`cmd &`,
    // children ignoring TERM) is stopped first, so no next attempt of the task runs beside it.
    await (group as GroupStop | null)?.ended();
    const { code, signal, spawnError, outputTail, logPath, note = null, cause } = ended;
    const ok = !spawnError && code === 0;
    return {
      ok,
      result: null,
      error: ok ? null : { name: 'Error', message: describeExit(code, signal, spawnError, outputTail, cause ?? note ?? undefined), retryable: true },
      exitCode: code,
      signal,
      outputTail: tailWithNote(outputTail, note),
      logPath,
      durationMs: Date.now() - started,
    };
  })();

  return {
    abort() {
      aborted = true;
      (group as GroupStop | null)?.begin();
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
  // Through the helper a command writes straight into its log, so a log that cannot take its
  // output (a full disk, a folder that cannot be made) would make its own writes fail and fail
  // it. Its output is then discarded instead, and the tail says why: the outcome is what the
  // command did, as with Node's spawn. (Not Node's spawn here: in the coordinator's process
  // its commands would outlive a SIGKILLed coordinator; the helper kills them.)
  let noLog: string | null = null;
  const dir = dirname(logFile);
  if (!madeDirs.has(dir)) {
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      madeDirs.add(dir);
    } catch (err) {
      noLog = `the log folder ${dir} could not be made: ${(err as Error).message}`;
    }
  }
  if (noLog === null && logSpaceLow(dir)) noLog = `the log folder ${dir} is full`;
  const started = (pid: number) => onStarted(pid, true);
  let end = await spawner.run(argv, vars, noLog === null ? logFile : '', started);
  if (end.kind === 'log-failed') {
    noLog = `its log ${logFile} could not be created: ${errnoName(end.errno)}`;
    end = await spawner.run(argv, vars, '', started);
  }
  switch (end.kind) {
    case 'exited': {
      const signo = end.status & 0x7f;
      const name = signo ? (SIGNAL_NAMES.get(signo) ?? null) : null;
      const written = end.written > 0;
      const code = signo ? (name ? null : 128 + signo) : (end.status >> 8) & 0xff;
      // The disk filled while it ran: that may be why it failed (a write of its output failed).
      const full = noLog === null && (code !== 0 || name !== null) && logSpaceLow(dir);
      return {
        // A signal Node has no name for (real-time ones) is reported as the shell would: 128+n.
        code,
        signal: name,
        spawnError: null,
        outputTail: written ? readTail(logFile, end.written) : null,
        note: noLog === null ? null : `no output kept: ${noLog}`,
        logPath: written ? logFile : null,
        ...(full ? { cause: `its log folder ${dir} filled up while it ran, so writing its output may have failed` } : {}),
      };
    }
    case 'spawn-failed': {
      const code = errnoName(end.errno);
      return { code: null, signal: null, spawnError: { code, message: `could not start ${argv[0]}: spawn ${argv[0]} ${code}` }, outputTail: null, logPath: null };
    }
    case 'log-failed': {
      // Even /dev/null could not be opened for its output: nothing ran.
      const code = errnoName(end.errno);
      return { code: null, signal: null, spawnError: { code, message: `could not start ${argv[0]}: no output file (${noLog}; /dev/null: ${code})` }, outputTail: null, logPath: null };
    }
    case 'spawner-died': {
      // Its signal is the attempt's: the command's own end is unknown (the helper was its parent).
      const message = end.signal ? `the spawner helper was killed by ${end.signal} while the command ran` : 'the spawner helper died while the command ran';
      return { code: null, signal: end.signal, spawnError: { code: SPAWNER_DIED, message }, outputTail: null, logPath: null };
    }
  }
}

function errnoName(errno: number): string {
  return Object.entries(constants.errno).find(([, n]) => n === errno)?.[0] ?? `errno ${errno}`;
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
      const { outputTail, logPath, note } = capture.finish();
      const error = spawnError ? { code: spawnError.code ?? 'ERROR', message: `could not start ${argv[0]}: ${spawnError.message}` } : null;
      resolve({ code: exit?.code ?? null, signal: exit?.signal ?? null, spawnError: error, outputTail, logPath, note });
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

function describeExit(code: number | null, signal: string | null, spawnError: { message: string } | null, tail: string | null, cause?: string): string {
  if (spawnError) return spawnError.message;
  const what = `${signal ? `killed by ${signal}` : `exit code ${code}`}${cause ? ` (${cause})` : ''}`;
  const lastLine = tail?.trimEnd().split('\n').pop()?.trim();
  return lastLine ? `${what}: ${lastLine.slice(0, 300)}` : what;
}
