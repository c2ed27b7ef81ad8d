/**
 * Every Settlement is built here, whole, ready to commit: an attempt's end (decideSettlement,
 * its declared output's `out` and temporary path included), a task found up to date
 * (upToDateSettlement), and a claim an outage lost (lostClaimSettlement). No other file adds to one.
 */
import ms from 'ms';
import { errorLine, type SerializedError } from '../errors.js';
import type { OutputPaths } from '../output/output-path.js';
import { cutError } from '../stored-text.js';
import type { ClaimedTask, Outcome, Settlement } from '../store/task-store.js';
import type { DoneMessage } from '../worker/protocol.js';
import { backoffDelay, type BackoffPolicy } from './backoff.js';
import { resultWithOut } from './declared-outputs.js';
import { GuardedMatcher } from './guarded-match.js';

export interface RetryRules {
  policy: BackoffPolicy;
  permanentCodes: number[];
  timeoutMs: number | null;
  /** --permanent-errors: a failed attempt whose error or output tail matches one is final. */
  permanentErrors: RegExp[];
  heartbeatTimeoutMs: number | null;
  /** --retry-quiet: a quiet failure (DoneMessage.quiet) is retried like any other; else it is final. */
  retryQuiet: boolean;
  /** --busy-codes: exit codes that mean "busy, try later" (as a handler's RetryLater); --max-busy bounds a streak of them. */
  busyCodes: number[];
  maxBusyMs: number;
}

/** Why the coordinator stopped an attempt: --timeout, or --heartbeat-timeout (silence). */
export type TimedOut = false | 'timeout' | 'heartbeat';

/** How an attempt ended, as the coordinator saw it. */
export type Ending =
  | { kind: 'reported'; msg: DoneMessage; timedOut: TimedOut; outOfMemory?: boolean }
  /** Its worker (or an --exec batch's spawner helper, its body) died; `signal`, if one killed it. */
  | { kind: 'died'; why: string; timedOut: TimedOut; signal?: string | null; outOfMemory?: boolean }
  /** Stopped by a shutdown, or never started because its worker died first: not counted. */
  | { kind: 'interrupted'; why?: string }
  /** Never handed to a worker: nothing may run it (an output path a stage result cannot hold). */
  | { kind: 'not-run'; error: SerializedError };

/**
 * Turns an attempt's ending into the settlement to commit and says whether it ends the
 * task. This is where retry decisions live: workers only report. `startedAt`: when the
 * coordinator saw it start (its claim, unless `waited`: it waited queued on its worker). A
 * worker that reports when it started and how long it ran is believed over both: it may
 * have run the attempt while this process was busy or frozen, and its row should say so.
 * `output`: the attempt's declared output; a success's result then carries its `out`, and
 * its temporary path is recorded with the commit (renamed once that commit wins).
 */
export function decideSettlement(
  task: ClaimedTask,
  ending: Ending,
  rules: RetryRules,
  now: number,
  startedAt: number,
  waited = false,
  output: OutputPaths | null = null,
): {
  settlement: Settlement;
  terminal: boolean;
} {
  const ran = ending.kind === 'reported' && ending.msg.startedAt > 0 ? ending.msg : null;
  const start = ran ? ran.startedAt : startedAt;
  const end = ran ? Math.max(start, Math.min(now, start + ran.durationMs)) : now;
  // Object literals throughout, not spreads: this runs once per attempt, and spreading
  // small objects cost a few microseconds per attempt here.
  const settlement = (outcome: Outcome, error: string | null, io: Io): Settlement => ({
    token: task.token,
    taskId: task.id,
    outcome,
    startedAt: ran || waited ? start : undefined,
    endedAt: end,
    durationMs: end - start,
    exitCode: io.exitCode,
    signal: io.signal,
    outputTail: io.outputTail,
    logPath: io.logPath,
    error: error === null ? null : cutError(error), // whoever built it, the store keeps a bounded text
  });
  if (ending.kind === 'interrupted') {
    const error = `INTERRUPTED: ${ending.why ?? 'stopped by a signal'}; not counted`;
    return { settlement: settlement('INTERRUPTED', error, NO_IO), terminal: false };
  }
  const failure = (outcome: Outcome, error: string, permanent: boolean, io: Io = NO_IO) => {
    if (!permanent && rules.permanentErrors.length) permanent = matchesAny(rules.permanentErrors, error, io.outputTail);
    const at = permanent ? null : now + backoffDelay(task.counted, rules.policy);
    const s = settlement(outcome, error, io);
    s.retryAt = at;
    return { settlement: s, terminal: at === null || task.counted >= task.maxAttempts };
  };
  const timedOut = (why: 'timeout' | 'heartbeat', io: Io) =>
    failure(
      'TIMEOUT',
      why === 'heartbeat' ? `TIMEOUT: no heartbeat for ${ms(rules.heartbeatTimeoutMs ?? 0)}; killed` : `TIMEOUT: ran longer than ${rules.timeoutMs} ms and was killed`,
      false,
      io,
    );
  if (ending.kind === 'not-run') return failure('FAILED', errorLine(ending.error), ending.error.retryable === false);
  if (ending.kind === 'died') {
    // The row's signal column says what killed the worker (not only the error text), so a
    // SIGKILL (OOM killer, kill -9) can be found by a query.
    const io: Io = { exitCode: null, signal: ending.signal ?? null, outputTail: null, logPath: null };
    return ending.timedOut ? timedOut(ending.timedOut, io) : failure('CRASHED', `CRASHED: ${ending.outOfMemory ? outOfMemory(ending.why) : ending.why}`, false, io);
  }
  const m = ending.msg;
  if (m.ok) {
    const s = settlement('SUCCESS', null, m);
    s.result = output ? resultWithOut(m.result, output.path) : m.result;
    if (output) s.outputTemp = output.temp;
    return { settlement: s, terminal: true };
  }
  if (ending.timedOut) return timedOut(ending.timedOut, m);
  if (isBusy(m, rules)) {
    // Busy, try later (SPEC §10): back to wait, no attempt spent, until the streak passes --max-busy.
    const since = task.busySince ?? start;
    const what = m.error ? errorLine(m.error) : `exit code ${m.exitCode}`;
    if (end - since >= rules.maxBusyMs) return failure('FAILED', `busy for ${ms(end - since)} in a row, longer than --max-busy ${ms(rules.maxBusyMs)}: ${what}`, false, m);
    const delay = m.error?.busy?.retryAfterMs ?? busyBackoff(end - since, rules.policy);
    const s = settlement('BUSY', `busy: ${what}; tried again in ${ms(delay)}, no attempt spent`, m);
    s.retryAt = now + delay;
    return { settlement: s, terminal: false };
  }
  if (m.quiet && !rules.retryQuiet && !ending.outOfMemory) {
    // A command that exits non-zero by itself and says nothing on stderr (grep finding no
    // match, diff, test) gave an answer; it would give the same one in 5 s. Anything on
    // stderr, a signal or a timeout is a fault, retried (a failing service says why).
    return failure('FAILED', `exit code ${m.exitCode}${exitCause(m.error, m.exitCode)} with nothing on stderr: ${QUIET_NOT_RETRIED}`, true, m);
  }
  const error = m.error ? (ending.outOfMemory ? outOfMemory(errorLine(m.error)) : errorLine(m.error)) : 'failed';
  const permanent = m.error?.retryable === false || (m.exitCode !== null && rules.permanentCodes.includes(m.exitCode));
  return failure('FAILED', error, permanent, m);
}

/** Whether a reported failure says "busy, try later": a --busy-codes exit code, or a handler's RetryLater. */
export function isBusy(m: DoneMessage, rules: Pick<RetryRules, 'busyCodes'>): boolean {
  return !m.ok && (m.error?.busy !== undefined || (m.exitCode !== null && rules.busyCodes.includes(m.exitCode)));
}

/**
 * The wait after a busy answer without a delay of its own: the backoff, then as long as the
 * streak has lasted so far (so the waits double), at most --max-backoff, spread by the jitter.
 */
function busyBackoff(streakMs: number, policy: BackoffPolicy): number {
  const wait = Math.min(Math.max(policy.backoffMs, streakMs), policy.maxBackoffMs);
  return Math.max(0, Math.round(wait * (1 + policy.jitter * (2 * Math.random() - 1))));
}

/**
 * The cause the worker gave in brackets after an exit code (`exit code 3 (no log kept: … is
 * full): …`), kept when a quiet failure's error is worded anew: why it has no whole log.
 */
function exitCause(error: Parameters<typeof errorLine>[0] | null | undefined, code: number | null): string {
  if (!error) return '';
  const rest = errorLine(error).slice(`exit code ${code}`.length);
  if (!errorLine(error).startsWith(`exit code ${code} (`)) return '';
  const end = rest.search(/\)(?=: |$)/);
  return end > 0 ? rest.slice(0, end + 1) : '';
}

/**
 * Whether the attempt (its command, or the worker or helper it ran in) ended by SIGKILL: a
 * shell reports its command's as exit code 137. Only such an ending may be the OOM killer's.
 */
export function killedOutright(ending: Ending): boolean {
  if (ending.kind === 'died') return ending.signal === 'SIGKILL';
  return ending.kind === 'reported' && !ending.msg.ok && (ending.msg.signal === 'SIGKILL' || ending.msg.exitCode === 137);
}

/** Why a quiet failure was final, in its error: what `show` and the FAILED line say. */
const QUIET_NOT_RETRIED = 'an answer, not retried; --retry-quiet retries it';

/** The error of an attempt the OOM killer ended: what show prints, what --permanent-errors can match. */
const outOfMemory = (how: string) => `killed: out of memory (the kernel's OOM killer; ${how})`;

/** One guarded matcher (its own thread) per rule set: the patterns are the user's (guarded-match.ts). */
const matchers = new WeakMap<RegExp[], GuardedMatcher>();

function matchesAny(patterns: RegExp[], error: string, tail: string | null): boolean {
  let matcher = matchers.get(patterns);
  if (!matcher) matchers.set(patterns, (matcher = new GuardedMatcher(patterns)));
  return matcher.matchesAny([error, tail]);
}

type Io = Pick<Settlement, 'exitCode' | 'signal' | 'outputTail' | 'logPath'>;
const NO_IO: Io = { exitCode: null, signal: null, outputTail: null, logPath: null };

/** A task whose declared output is newer than its inputs (SPEC §4): a success that ran nothing. */
export function upToDateSettlement(task: ClaimedTask, out: string, now: number): Settlement {
  return {
    token: task.token,
    taskId: task.id,
    outcome: 'SUCCESS',
    startedAt: now,
    endedAt: now,
    durationMs: 0,
    exitCode: null,
    signal: null,
    error: null,
    outputTail: null,
    logPath: null,
    result: JSON.stringify({ out }),
    upToDate: true,
  };
}

/**
 * An attempt claimed in a commit whose reply a store outage lost: no worker ever ran it, so
 * it goes back uncharged (outage.ts finds them when the store is back).
 */
export function lostClaimSettlement(taskId: number, attemptId: number, now: number): Settlement {
  return {
    token: attemptId,
    taskId,
    outcome: 'INTERRUPTED',
    endedAt: now,
    durationMs: 0,
    exitCode: null,
    signal: null,
    error: 'INTERRUPTED: claimed in a commit whose reply a store outage lost; never started; not counted',
    outputTail: null,
    logPath: null,
  };
}
