import { constants } from 'node:os';
import { serializeError } from '../errors.js';
import { renderExec } from '../template/exec-command.js';
import { renderGroup, type GroupMode } from '../template/group-command.js';
import { GroupStop } from './group-stop.js';
import type { Launched, Launcher } from './launcher.js';
import { tailWithNote } from './output-capture.js';
import type { DoneMessage, TaskMessage } from './protocol.js';
import { taskInput } from './task-bytes.js';

export interface RunningExec {
  /** TERM its process group, KILL after the grace (one still queued in the launcher is TERMed the moment it starts). */
  abort(): void;
  /** KILL its process group now (its worker is going away). */
  kill(): void;
  /** Calls `listener` with its process group when its command starts, or now if it has (launcher.ts's Launch); never for one that does not. */
  onStart(listener: (pgid: number) => void): void;
  /** Its outcome, or 'dropped' when the launcher gave it back unstarted. */
  done: Promise<DoneMessage | 'dropped'>;
}

/**
 * One `--exec` attempt: renders the template to a command, hands it to the slot's launcher
 * (launcher.ts), where it starts in its turn in its own session and process group, so a
 * timeout or shutdown can kill the command and everything it started with one signal, and
 * its end can stop whatever it left behind (only a `setsid` daemon escapes the group). A
 * simple command runs without a shell, with the same arguments, and a signal death reported
 * as the shell would (exit 128+n). With `groupMode` (-n, -X, …) one command runs the task and
 * the other items of its group (`task.more`).
 */
export function runExec(
  template: string,
  task: TaskMessage,
  killGraceMs: number,
  vars: Record<string, string>,
  launcher: Launcher,
  pipe = false,
  groupMode?: GroupMode,
): RunningExec {
  let argv: string[];
  let fallback: string | null;
  try {
    ({ argv, fallback } = groupMode ? renderGroup(template, [task, ...(task.more ?? [])], groupMode) : renderExec(template, task));
  } catch (err) {
    // e.g. {inputs.x.y} naming a field the needed stage's result lacks: the attempt fails, nothing runs.
    return notRun(task.token, serializeError(err));
  }
  if ([...argv, fallback ?? '', ...Object.values(vars)].some((s) => s.includes('\0'))) {
    // Only a stage result can put one there ({inputs…}); no program can receive it, and a retry would not help.
    const message = `the command line holds a NUL byte (from a placeholder's value), which no command can receive: ${JSON.stringify(fallback ?? argv[2]).slice(0, 200)}`;
    return notRun(task.token, { name: 'Error', message, retryable: false });
  }
  let group: GroupStop | null = null;
  let aborted = false;
  let started = 0;
  const stdin = pipe ? taskInput(task.payload) : undefined;
  const launch = launcher.launch({ argv, fallback, vars, logFile: task.logFile, print: task.print, ...(stdin ? { stdin } : {}) });
  // The first to hear its start: its group exists before anyone else hears of it.
  launch.onStart((pgid, at) => {
    started = at;
    group = new GroupStop(pgid, killGraceMs);
  });

  const done = (async (): Promise<DoneMessage | 'dropped'> => {
    let ended = await launch.ended;
    if (ended.kind === 'dropped') return 'dropped';
    if (ended.kind === 'died') {
      // Whether it started is unknown; a group we know of is killed (its worker dies with the
      // helper). One the helper started without saying so is found by the pool, by the
      // attempt's environment, before the attempt ends (attempt-processes.ts).
      (group as GroupStop | null)?.kill();
    } else if (ended.kind === 'ran' && fallback !== null && ended.signal && !aborted) {
      ended = { ...ended, code: 128 + constants.signals[ended.signal], signal: null };
    }
    // The attempt is over only once its group is: what the command left running (`cmd &`,
    // children ignoring TERM) is stopped first, so no next attempt of the task runs beside it.
    // The helper says whether anything of its group was left: if not, there is nothing to wait for.
    const g = group as GroupStop | null;
    const lingered = ended.kind === 'ran' && ended.lingers === false ? (g?.settled(), false) : await g?.ended();
    // Its end: when it exited, or once what it left running was stopped.
    const endedAt = ended.kind === 'ran' && !lingered ? ended.endedAt : Date.now();
    return doneMessage(task.token, ended, started, endedAt, aborted);
  })();

  return {
    abort() {
      aborted = true;
      // Now, or the moment it starts if it is still queued (after its start is reported).
      launch.onStart(() => (group as GroupStop | null)?.begin());
    },
    kill() {
      (group as GroupStop | null)?.kill();
    },
    onStart(listener) {
      launch.onStart(listener);
    },
    done,
  };
}

/** The attempt's done message (protocol.ts), as the worker sends it. */
function doneMessage(token: number, ended: Exclude<Launched, { kind: 'dropped' }>, started: number, endedAt: number, aborted: boolean): DoneMessage {
  const durationMs = started ? Math.max(0, endedAt - started) : 0;
  if (ended.kind === 'ran') {
    const { code, signal, outputTail, logPath, note, cause, unprinted, wroteStderr } = ended;
    // With --print, output that could not be kept for printing fails the attempt: a run must
    // not end 0 with it missing from its stdout.
    const ok = code === 0 && !unprinted;
    const failure = code === 0 ? unprinted! : describeExit(code, signal, outputTail, cause ?? note ?? undefined) + (unprinted ? `; ${unprinted}` : '');
    // Stopped (a timeout, a shutdown) is not by itself; above 128 is how a shell reports a signal;
    // a disk that filled (cause) may be why it failed.
    const quiet = !ok && !aborted && !unprinted && !cause && signal === null && code !== null && code >= 1 && code <= 128 && wroteStderr === false;
    return {
      token,
      ...(quiet ? { quiet: true as const } : {}),
      ok,
      result: null,
      error: ok ? null : { name: 'Error', message: failure, retryable: true },
      exitCode: code,
      signal,
      outputTail: tailWithNote(outputTail, note),
      logPath,
      durationMs,
      startedAt: started,
    };
  }
  const message = ended.kind === 'died'
    ? ended.signal ? `the spawner helper was killed by ${ended.signal} while the command ran` : 'the spawner helper died while the command ran'
    : ended.message;
  const signal = ended.kind === 'died' ? ended.signal : null;
  const retryable = ended.kind === 'died' || ended.retryable !== false;
  return { token, ok: false, result: null, error: { name: 'Error', message, retryable }, exitCode: null, signal, outputTail: null, logPath: null, durationMs, startedAt: started };
}

/** An attempt that fails before anything runs. */
export function notRun(token: number, error: NonNullable<DoneMessage['error']>): RunningExec {
  const done: DoneMessage = { token, ok: false, result: null, error, exitCode: null, signal: null, outputTail: null, logPath: null, durationMs: 0, startedAt: 0 };
  return { abort() {}, kill() {}, onStart() {}, done: Promise.resolve(done) };
}

function describeExit(code: number | null, signal: string | null, tail: string | null, cause?: string): string {
  const what = `${signal ? `killed by ${signal}` : `exit code ${code}`}${cause ? ` (${cause})` : ''}`;
  const lastLine = tail?.trimEnd().split('\n').pop()?.trim();
  return lastLine ? `${what}: ${lastLine.slice(0, 300)}` : what;
}
