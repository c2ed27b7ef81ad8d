import { errorLine } from '../errors.js';
import type { ClaimedTask, Outcome, Settlement } from '../store/task-store.js';
import type { DoneMessage } from '../worker/protocol.js';
import { backoffDelay, type BackoffPolicy } from './backoff.js';

export interface RetryRules {
  policy: BackoffPolicy;
  permanentCodes: number[];
  timeoutMs: number | null;
}

/** How an attempt ended, as the coordinator saw it. */
export type Ending =
  | { kind: 'reported'; msg: DoneMessage; timedOut: boolean }
  | { kind: 'died'; why: string; timedOut: boolean }
  /** Stopped by a shutdown, or never started because its worker died first: not counted. */
  | { kind: 'interrupted'; why?: string };

/**
 * Turns an attempt's ending into the settlement to commit and says whether it ends the
 * task. This is where retry decisions live: workers only report.
 */
export function settle(task: ClaimedTask, ending: Ending, rules: RetryRules, now: number, startedAt: number): {
  settlement: Settlement;
  terminal: boolean;
} {
  const base = { token: task.token, taskId: task.id, endedAt: now, durationMs: now - startedAt };
  type Io = Pick<Settlement, 'exitCode' | 'signal' | 'outputTail' | 'logPath'>;
  const io: Io = { exitCode: null, signal: null, outputTail: null, logPath: null };
  if (ending.kind === 'interrupted') {
    const error = `INTERRUPTED: ${ending.why ?? 'stopped by a signal'}; not counted`;
    return { settlement: { ...base, ...io, outcome: 'INTERRUPTED', error }, terminal: false };
  }
  const failure = (outcome: Outcome, error: string, permanent: boolean, extra: Io = io) => {
    const at = permanent ? null : now + backoffDelay(task.attempt, rules.policy);
    return {
      settlement: { ...base, ...extra, outcome, error, retryAt: at },
      terminal: at === null || task.attempt >= task.maxAttempts,
    };
  };
  const timeoutText = `TIMEOUT: ran longer than ${rules.timeoutMs} ms and was killed`;
  if (ending.kind === 'died') {
    return ending.timedOut ? failure('TIMEOUT', timeoutText, false) : failure('CRASHED', `CRASHED: ${ending.why}`, false);
  }
  const m = ending.msg;
  const out: Io = { exitCode: m.exitCode, signal: m.signal, outputTail: m.outputTail, logPath: m.logPath };
  if (m.ok) {
    return { settlement: { ...base, ...out, outcome: 'SUCCESS', error: null, result: m.result }, terminal: true };
  }
  if (ending.timedOut) return failure('TIMEOUT', timeoutText, false, out);
  const error = m.error ? errorLine(m.error) : 'failed';
  const permanent = m.error?.retryable === false || (m.exitCode !== null && rules.permanentCodes.includes(m.exitCode));
  return failure('FAILED', error, permanent, out);
}
