import { describe, expect, it } from 'vitest';
import type { BackoffPolicy } from '../../src/coordinator/backoff.js';
import { decideSettlement, killedOutright, type Ending, type RetryRules, type TimedOut } from '../../src/coordinator/settlement.js';
import { PermanentError, serializeError, type SerializedError } from '../../src/errors.js';
import type { ClaimedTask } from '../../src/store/task-store.js';
import type { DoneMessage } from '../../src/worker/protocol.js';

const NOW = 1_700_000_000_000;
const STARTED = NOW - 1_234;
const policy: BackoffPolicy = { backoffMs: 5_000, factor: 5, maxBackoffMs: 3_600_000, jitter: 0 };
const rules = (over: Partial<RetryRules> = {}): RetryRules => ({
  policy,
  permanentCodes: [],
  timeoutMs: 30_000,
  permanentErrors: [],
  heartbeatTimeoutMs: null,
  retryQuiet: false,
  busyCodes: [75],
  maxBusyMs: 3_600_000,
  ...over,
});

function claimed(attempt: number, maxAttempts = 4): ClaimedTask {
  return {
    id: 9,
    token: 77,
    key: 'a.log',
    stage: 'main',
    seq: 1,
    attempt,
    counted: attempt,
    maxAttempts,
    payload: { version: 1, path: '/src/a.log', rel: 'a.log' },
    workerId: 'w1',
    inputs: {},
    busySince: null,
  };
}

function done(over: Partial<DoneMessage> = {}): DoneMessage {
  return {
    token: 77,
    ok: false,
    result: null,
    error: null,
    exitCode: 1,
    signal: null,
    outputTail: 'some output',
    logPath: '/logs/b/a.log.1',
    durationMs: 1_200,
    startedAt: 0,
    ...over,
  };
}

const reported = (msg: DoneMessage, timedOut: TimedOut = false): Ending => ({ kind: 'reported', msg, timedOut });
const err = (over: Partial<SerializedError> = {}): SerializedError => ({ name: 'Error', message: 'boom', retryable: true, ...over });

describe('decideSettlement', () => {
  it('builds the whole settlement: a success with a declared output carries its `out` in the result and its temporary path; nothing else does', () => {
    const output = { path: '/out/a.txt', temp: '/out/.a.txt.77.tmp' };
    const ok = decideSettlement(claimed(1), reported(done({ ok: true, exitCode: 0, result: '{"n":1}' })), rules(), NOW, STARTED, false, output).settlement;
    expect(ok).toMatchObject({ outcome: 'SUCCESS', result: JSON.stringify({ n: 1, out: '/out/a.txt' }), outputTemp: output.temp });
    const plain = decideSettlement(claimed(1), reported(done({ ok: true, exitCode: 0, result: '[1]' })), rules(), NOW, STARTED, false, output).settlement;
    expect(plain.result).toBe(JSON.stringify({ out: '/out/a.txt', value: [1] }));
    const without = decideSettlement(claimed(1), reported(done({ ok: true, exitCode: 0, result: '{"n":1}' })), rules(), NOW, STARTED).settlement;
    expect(without.result).toBe('{"n":1}');
    expect('outputTemp' in without).toBe(false);
    const failed = decideSettlement(claimed(1), reported(done({ error: err() })), rules(), NOW, STARTED, false, output).settlement;
    expect('outputTemp' in failed || 'result' in failed).toBe(false);
    const died = decideSettlement(claimed(1), { kind: 'died', why: 'worker killed by SIGKILL', timedOut: false, signal: 'SIGKILL' }, rules(), NOW, STARTED, false, output).settlement;
    expect('outputTemp' in died).toBe(false);
  });

  it('SUCCESS: terminal, result and output kept, no error', () => {
    const { settlement, terminal } = decideSettlement(
      claimed(1),
      reported(done({ ok: true, result: '{"n":3}', exitCode: 0 })),
      rules(),
      NOW,
      STARTED,
    );
    expect(terminal).toBe(true);
    expect(settlement).toMatchObject({
      token: 77,
      taskId: 9,
      outcome: 'SUCCESS',
      endedAt: NOW,
      durationMs: 1_234,
      exitCode: 0,
      signal: null,
      error: null,
      result: '{"n":3}',
      outputTail: 'some output',
      logPath: '/logs/b/a.log.1',
    });
  });

  it('SUCCESS on the last attempt is still SUCCESS', () => {
    const { settlement, terminal } = decideSettlement(claimed(4, 4), reported(done({ ok: true, exitCode: 0 })), rules(), NOW, STARTED);
    expect(settlement.outcome).toBe('SUCCESS');
    expect(terminal).toBe(true);
  });

  describe('retryable failure', () => {
    // [attempt, maxAttempts, expected delay, terminal]
    const table: [number, number, number, boolean][] = [
      [1, 4, 5_000, false],
      [2, 4, 25_000, false],
      [3, 4, 125_000, false],
      [4, 4, 625_000, true],
      [1, 1, 5_000, true],
      [5, 4, 3_125_000, true],
    ];
    for (const [attempt, max, delay, terminal] of table) {
      it(`attempt ${attempt}/${max}: FAILED, ${terminal ? 'terminal' : `retryAt now + ${delay}`}`, () => {
        const r = decideSettlement(claimed(attempt, max), reported(done({ error: err() })), rules(), NOW, STARTED);
        expect(r.settlement.outcome).toBe('FAILED');
        expect(r.settlement.error).toBe('boom');
        expect(r.terminal).toBe(terminal);
        if (!terminal) expect(r.settlement.retryAt).toBe(NOW + delay);
        expect(r.settlement).toMatchObject({ exitCode: 1, outputTail: 'some output', logPath: '/logs/b/a.log.1', durationMs: 1_234 });
      });
    }

    it('retryAt is capped by maxBackoff', () => {
      const r = decideSettlement(claimed(3, 9), reported(done()), rules({ policy: { ...policy, maxBackoffMs: 60_000 } }), NOW, STARTED);
      expect(r.settlement.retryAt).toBe(NOW + 60_000);
      expect(r.terminal).toBe(false);
    });

    it('retryAt stays within the jitter band', () => {
      for (let i = 0; i < 50; i++) {
        const r = decideSettlement(claimed(1), reported(done()), rules({ policy: { ...policy, jitter: 0.1 } }), NOW, STARTED);
        expect(r.settlement.retryAt).toBeGreaterThanOrEqual(NOW + 4_500);
        expect(r.settlement.retryAt).toBeLessThanOrEqual(NOW + 5_500);
      }
    });

    it('an exec failure without an error object is described as "failed"', () => {
      const r = decideSettlement(claimed(1), reported(done({ exitCode: 3, error: null })), rules(), NOW, STARTED);
      expect(r.settlement.outcome).toBe('FAILED');
      expect(r.settlement.error).toBe('failed');
      expect(r.settlement.exitCode).toBe(3);
      expect(r.terminal).toBe(false);
    });

    it('the error line carries the name and code', () => {
      const r = decideSettlement(
        claimed(1),
        reported(done({ error: err({ name: 'TypeError', message: 'x is not a function' }) })),
        rules(),
        NOW,
        STARTED,
      );
      expect(r.settlement.error).toBe('TypeError: x is not a function');
      const r2 = decideSettlement(claimed(1), reported(done({ error: err({ code: 'ENOENT', message: 'no such file' }) })), rules(), NOW, STARTED);
      expect(r2.settlement.error).toBe('ENOENT: no such file');
    });

    it('a signal-killed exec (exitCode null) is retryable even with permanent codes set', () => {
      const r = decideSettlement(claimed(1), reported(done({ exitCode: null, signal: 'SIGKILL' })), rules({ permanentCodes: [0, 1, 137] }), NOW, STARTED);
      expect(r.settlement.outcome).toBe('FAILED');
      expect(r.settlement.signal).toBe('SIGKILL');
      expect(r.settlement.retryAt).toBe(NOW + 5_000);
      expect(r.terminal).toBe(false);
    });
  });

  describe('permanent failure', () => {
    it('a thrown PermanentError → retryAt null and terminal on the first attempt', () => {
      const e = serializeError(new PermanentError('bad record'));
      expect(e.retryable).toBe(false);
      const r = decideSettlement(claimed(1, 4), reported(done({ error: e })), rules(), NOW, STARTED);
      expect(r.settlement.outcome).toBe('FAILED');
      expect(r.settlement.retryAt).toBeNull();
      expect(r.settlement.error).toBe('PermanentError: bad record');
      expect(r.terminal).toBe(true);
    });

    it('any error with retryable:false → retryAt null and terminal', () => {
      const r = decideSettlement(claimed(2, 10), reported(done({ error: err({ name: 'ValidationError', message: 'nope', retryable: false }) })), rules(), NOW, STARTED);
      expect(r.settlement.retryAt).toBeNull();
      expect(r.terminal).toBe(true);
    });

    it('an exit code in permanentCodes → retryAt null and terminal', () => {
      const r = decideSettlement(claimed(1, 4), reported(done({ exitCode: 42 })), rules({ permanentCodes: [3, 42] }), NOW, STARTED);
      expect(r.settlement.outcome).toBe('FAILED');
      expect(r.settlement.exitCode).toBe(42);
      expect(r.settlement.retryAt).toBeNull();
      expect(r.terminal).toBe(true);
    });

    it('an exit code not in permanentCodes stays retryable', () => {
      const r = decideSettlement(claimed(1, 4), reported(done({ exitCode: 2 })), rules({ permanentCodes: [3, 42] }), NOW, STARTED);
      expect(r.settlement.retryAt).toBe(NOW + 5_000);
      expect(r.terminal).toBe(false);
    });
  });

  describe('timeout', () => {
    it('a timed-out report → TIMEOUT, retried like a failure', () => {
      const r = decideSettlement(claimed(1, 4), reported(done({ exitCode: null, signal: 'SIGTERM' }), 'timeout'), rules(), NOW, STARTED);
      expect(r.settlement.outcome).toBe('TIMEOUT');
      expect(r.settlement.error).toMatch(/^TIMEOUT/);
      expect(r.settlement.error).toContain('30000');
      expect(r.settlement.retryAt).toBe(NOW + 5_000);
      expect(r.settlement.signal).toBe('SIGTERM');
      expect(r.settlement.outputTail).toBe('some output');
      expect(r.terminal).toBe(false);
    });

    it('a timed-out report on the last attempt is terminal', () => {
      const r = decideSettlement(claimed(4, 4), reported(done({ error: err() }), 'timeout'), rules(), NOW, STARTED);
      expect(r.settlement.outcome).toBe('TIMEOUT');
      expect(r.terminal).toBe(true);
    });

    it('a timeout is retried even if its exit code is a permanent one', () => {
      const r = decideSettlement(claimed(1, 4), reported(done({ exitCode: 42 }), 'timeout'), rules({ permanentCodes: [42] }), NOW, STARTED);
      expect(r.settlement.outcome).toBe('TIMEOUT');
      expect(r.settlement.retryAt).toBe(NOW + 5_000);
      expect(r.terminal).toBe(false);
    });
  });

  describe('heartbeat timeout', () => {
    it("a report stopped for silence → TIMEOUT 'no heartbeat for …', retried; --timeout's message unchanged", () => {
      const r = decideSettlement(claimed(1, 4), reported(done({ exitCode: null, signal: 'SIGTERM' }), 'heartbeat'), rules({ heartbeatTimeoutMs: 30_000 }), NOW, STARTED);
      expect(r.settlement.outcome).toBe('TIMEOUT');
      expect(r.settlement.error).toBe('TIMEOUT: no heartbeat for 30s; killed');
      expect(r.settlement.retryAt).toBe(NOW + 5_000);
      expect(r.terminal).toBe(false);
      const t = decideSettlement(claimed(1, 4), reported(done(), 'timeout'), rules({ heartbeatTimeoutMs: 30_000 }), NOW, STARTED);
      expect(t.settlement.error).toBe('TIMEOUT: ran longer than 30000 ms and was killed');
    });

    it('a worker killed for silence → TIMEOUT with the heartbeat message', () => {
      const r = decideSettlement(claimed(1, 4), { kind: 'died', why: 'killed', timedOut: 'heartbeat', signal: 'SIGKILL' }, rules({ heartbeatTimeoutMs: 1_500 }), NOW, STARTED);
      expect(r.settlement.outcome).toBe('TIMEOUT');
      expect(r.settlement.error).toBe('TIMEOUT: no heartbeat for 2s; killed');
      expect(r.settlement.signal).toBe('SIGKILL');
    });
  });

  describe('permanent errors', () => {
    const pe = (...sources: string[]) => rules({ permanentErrors: sources.map((s) => new RegExp(s)) });

    it('a FAILED attempt whose error matches → final on its first attempt', () => {
      const r = decideSettlement(claimed(1, 4), reported(done({ error: err({ message: 'Invalid header in row 3' }), outputTail: null })), pe('Invalid header'), NOW, STARTED);
      expect(r.settlement.outcome).toBe('FAILED');
      expect(r.settlement.retryAt).toBeNull();
      expect(r.terminal).toBe(true);
    });

    it('a FAILED attempt whose output tail matches (and error does not) → final', () => {
      const r = decideSettlement(claimed(1, 4), reported(done({ error: err({ message: 'exit code 1' }), outputTail: 'reading\nERR-42 bad input\ndone\n' })), pe('ERR-\\d+ bad', 'x{3}'), NOW, STARTED);
      expect(r.settlement.retryAt).toBeNull();
      expect(r.terminal).toBe(true);
    });

    it('no match → retried as usual', () => {
      const r = decideSettlement(claimed(1, 4), reported(done({ error: err({ message: 'connection reset' }), outputTail: 'some output' })), pe('Invalid header'), NOW, STARTED);
      expect(r.settlement.retryAt).toBe(NOW + 5_000);
      expect(r.terminal).toBe(false);
    });

    it('a TIMEOUT whose output tail matches → final; a CRASHED whose reason matches → final', () => {
      const t = decideSettlement(claimed(1, 4), reported(done({ outputTail: 'disk quota exceeded' }), 'timeout'), pe('quota'), NOW, STARTED);
      expect(t.settlement.outcome).toBe('TIMEOUT');
      expect(t.settlement.retryAt).toBeNull();
      expect(t.terminal).toBe(true);
      const c = decideSettlement(claimed(1, 4), { kind: 'died', why: 'worker killed by SIGSEGV', timedOut: false }, pe('SIGSEGV'), NOW, STARTED);
      expect(c.settlement.outcome).toBe('CRASHED');
      expect(c.settlement.retryAt).toBeNull();
      expect(c.terminal).toBe(true);
    });

    it('never an INTERRUPTED or a SUCCESS attempt, whatever they printed', () => {
      const i = decideSettlement(claimed(1, 4), { kind: 'interrupted', why: 'Invalid header' }, pe('Invalid header', 'INTERRUPTED'), NOW, STARTED);
      expect(i.settlement.outcome).toBe('INTERRUPTED');
      expect(i.terminal).toBe(false);
      const s = decideSettlement(claimed(1, 4), reported(done({ ok: true, exitCode: 0, outputTail: 'Invalid header' })), pe('Invalid header'), NOW, STARTED);
      expect(s.settlement.outcome).toBe('SUCCESS');
    });
  });

  describe('worker death', () => {
    it('→ CRASHED with the reason, retried', () => {
      const r = decideSettlement(claimed(2, 4), { kind: 'died', why: 'worker exited with signal SIGSEGV', timedOut: false }, rules(), NOW, STARTED);
      expect(r.settlement.outcome).toBe('CRASHED');
      expect(r.settlement.error).toBe('CRASHED: worker exited with signal SIGSEGV');
      expect(r.settlement.retryAt).toBe(NOW + 25_000);
      expect(r.settlement).toMatchObject({ exitCode: null, signal: null, outputTail: null, logPath: null, token: 77, taskId: 9 });
      expect(r.terminal).toBe(false);
    });

    it('→ CRASHED and terminal on the last attempt (a task that always kills its worker ends)', () => {
      const r = decideSettlement(claimed(4, 4), { kind: 'died', why: 'exit 1', timedOut: false }, rules(), NOW, STARTED);
      expect(r.settlement.outcome).toBe('CRASHED');
      expect(r.terminal).toBe(true);
    });

    it('→ TIMEOUT when the worker died because it timed out', () => {
      const r = decideSettlement(claimed(1, 4), { kind: 'died', why: 'killed', timedOut: 'timeout' }, rules(), NOW, STARTED);
      expect(r.settlement.outcome).toBe('TIMEOUT');
      expect(r.settlement.retryAt).toBe(NOW + 5_000);
      expect(r.terminal).toBe(false);
    });
  });

  describe('the OOM killer', () => {
    it('a command it killed → FAILED "killed: out of memory", retried; --permanent-errors can match it', () => {
      const killed = done({ exitCode: null, signal: 'SIGKILL', error: err({ message: 'killed by SIGKILL' }) });
      const r = decideSettlement(claimed(1, 4), { kind: 'reported', msg: killed, timedOut: false, outOfMemory: true }, rules(), NOW, STARTED);
      expect(r.settlement).toMatchObject({ outcome: 'FAILED', signal: 'SIGKILL', error: "killed: out of memory (the kernel's OOM killer; killed by SIGKILL)", retryAt: NOW + 5_000 });
      const p = decideSettlement(claimed(1, 4), { kind: 'reported', msg: killed, timedOut: false, outOfMemory: true }, rules({ permanentErrors: [/out of memory/] }), NOW, STARTED);
      expect(p.terminal).toBe(true);
      const other = decideSettlement(claimed(1, 4), reported(killed), rules({ permanentErrors: [/out of memory/] }), NOW, STARTED);
      expect(other.settlement.error).toBe('killed by SIGKILL');
      expect(other.terminal).toBe(false);
    });

    it('a worker it killed → CRASHED "killed: out of memory"', () => {
      const r = decideSettlement(claimed(1, 4), { kind: 'died', why: 'worker killed by SIGKILL', timedOut: false, signal: 'SIGKILL', outOfMemory: true }, rules(), NOW, STARTED);
      expect(r.settlement).toMatchObject({ outcome: 'CRASHED', signal: 'SIGKILL', error: "CRASHED: killed: out of memory (the kernel's OOM killer; worker killed by SIGKILL)" });
    });

    it('only an ending by SIGKILL (or a shell\'s exit code 137) may be its', () => {
      expect(killedOutright({ kind: 'died', why: '', timedOut: false, signal: 'SIGKILL' })).toBe(true);
      expect(killedOutright({ kind: 'died', why: '', timedOut: false, signal: 'SIGSEGV' })).toBe(false);
      expect(killedOutright(reported(done({ exitCode: null, signal: 'SIGKILL' })))).toBe(true);
      expect(killedOutright(reported(done({ exitCode: 137 })))).toBe(true);
      expect(killedOutright(reported(done({ exitCode: 1 })))).toBe(false);
      expect(killedOutright(reported(done({ ok: true, exitCode: 0 })))).toBe(false);
      expect(killedOutright({ kind: 'interrupted' })).toBe(false);
    });
  });

  describe('interrupted', () => {
    for (const [attempt, max] of [
      [1, 4],
      [4, 4],
      [9, 4],
    ] as const) {
      it(`→ INTERRUPTED and not terminal (attempt ${attempt}/${max})`, () => {
        const r = decideSettlement(claimed(attempt, max), { kind: 'interrupted' }, rules(), NOW, STARTED);
        expect(r.settlement.outcome).toBe('INTERRUPTED');
        expect(r.terminal).toBe(false);
        expect(r.settlement.retryAt ?? null).toBeNull();
        expect(r.settlement).toMatchObject({ token: 77, taskId: 9, endedAt: NOW, durationMs: 1_234 });
      });
    }
  });
});

describe('a quiet failure (an exec exit 1-128 by itself with nothing on stderr)', () => {
  const quiet = done({ quiet: true, exitCode: 1, outputTail: '0\n', error: err({ message: 'exit code 1: 0' }) });

  it('fails its task at once, saying why, however many attempts are left', () => {
    const { settlement, terminal } = decideSettlement(claimed(1, 4), reported(quiet), rules(), NOW, STARTED);
    expect(terminal).toBe(true);
    expect(settlement).toMatchObject({ outcome: 'FAILED', retryAt: null, exitCode: 1, outputTail: '0\n' });
    expect(settlement.error).toBe('exit code 1 with nothing on stderr: an answer, not retried; --retry-quiet retries it');
  });

  it('with retryQuiet, is retried like any failure', () => {
    const { settlement, terminal } = decideSettlement(claimed(1, 4), reported(quiet), rules({ retryQuiet: true }), NOW, STARTED);
    expect(terminal).toBe(false);
    expect(settlement).toMatchObject({ outcome: 'FAILED', retryAt: NOW + 5_000, error: 'exit code 1: 0' });
  });

  it('timed out (or silent past the heartbeat timeout), or killed by the OOM killer, is a fault: retried', () => {
    for (const timedOut of ['timeout', 'heartbeat'] as const) {
      expect(decideSettlement(claimed(1, 4), reported(quiet, timedOut), rules({ heartbeatTimeoutMs: 1000 }), NOW, STARTED).terminal).toBe(false);
    }
    const oom: Ending = { kind: 'reported', msg: quiet, timedOut: false, outOfMemory: true };
    expect(decideSettlement(claimed(1, 4), oom, rules(), NOW, STARTED).terminal).toBe(false);
  });
});

describe('when the attempt ran', () => {
  it("believes the worker's own start and duration: it may have run while the coordinator was busy or frozen", () => {
    const { settlement } = decideSettlement(claimed(1), reported(done({ ok: true, error: null, exitCode: 0, startedAt: NOW - 5_000, durationMs: 1_000 })), rules(), NOW, STARTED);
    expect(settlement).toMatchObject({ startedAt: NOW - 5_000, endedAt: NOW - 4_000, durationMs: 1_000 });
  });

  it('never ends it after the coordinator learned of it, nor before it started', () => {
    const late = decideSettlement(claimed(1), reported(done({ startedAt: NOW - 100, durationMs: 5_000 })), rules(), NOW, STARTED).settlement;
    expect(late).toMatchObject({ startedAt: NOW - 100, endedAt: NOW, durationMs: 100 });
  });

  it('without the worker\'s times: from when it started after waiting queued, else from its claim (no start recorded)', () => {
    expect(decideSettlement(claimed(1), reported(done()), rules(), NOW, STARTED, true).settlement).toMatchObject({ startedAt: STARTED, endedAt: NOW, durationMs: NOW - STARTED });
    expect(decideSettlement(claimed(1), reported(done()), rules(), NOW, STARTED).settlement.startedAt).toBeUndefined();
  });
});

describe('decideSettlement: busy, try later (SPEC §10)', () => {
  const busyTask = (busySince: number | null, attempt = 4) => ({ ...claimed(attempt, 4), busySince });

  it('a --busy-codes exit code is BUSY: not terminal, back after the backoff, even on the last attempt and with nothing on stderr', () => {
    const { settlement, terminal } = decideSettlement(busyTask(null), reported(done({ exitCode: 75, quiet: true, error: err({ message: 'exit code 75' }) })), rules(), NOW, STARTED);
    expect(terminal).toBe(false);
    expect(settlement).toMatchObject({ outcome: 'BUSY', retryAt: NOW + 5_000, exitCode: 75 });
    expect(settlement.error).toBe('busy: exit code 75; tried again in 5s, no attempt spent');
    // Another code is a failure as ever; with --busy-codes none, 75 is one too.
    expect(decideSettlement(busyTask(null, 1), reported(done({ exitCode: 3, error: err() })), rules(), NOW, STARTED).settlement.outcome).toBe('FAILED');
    expect(decideSettlement(busyTask(null, 1), reported(done({ exitCode: 75, error: err() })), rules({ busyCodes: [] }), NOW, STARTED).settlement.outcome).toBe('FAILED');
  });

  it("a handler's RetryLater: its own delay, else the backoff; the waits grow with the streak", () => {
    const later = (ms: number | null) => reported(done({ exitCode: null, error: err({ name: 'RetryLater', message: 'slow down', busy: { retryAfterMs: ms } }) }));
    expect(decideSettlement(busyTask(null), later(1_500), rules(), NOW, STARTED).settlement).toMatchObject({ outcome: 'BUSY', retryAt: NOW + 1_500 });
    expect(decideSettlement(busyTask(null), later(null), rules(), NOW, STARTED).settlement.retryAt).toBe(NOW + 5_000);
    // Busy for 40 s in a row: the next wait is as long (the backoff, then doubling), at most --max-backoff.
    expect(decideSettlement(busyTask(NOW - 40_000), later(null), rules(), NOW, STARTED).settlement.retryAt).toBe(NOW + 40_000);
    expect(decideSettlement(busyTask(NOW - 40_000), later(null), rules({ policy: { ...policy, maxBackoffMs: 10_000 } }), NOW, STARTED).settlement.retryAt).toBe(NOW + 10_000);
  });

  it('busy for --max-busy in a row is a failure: charged, retried by the rules, terminal on the last attempt', () => {
    const streak = busyTask(NOW - 3_600_000, 4);
    const { settlement, terminal } = decideSettlement(streak, reported(done({ exitCode: 75, error: err({ message: 'exit code 75' }) })), rules(), NOW, STARTED);
    expect(settlement.outcome).toBe('FAILED');
    expect(settlement.error).toBe('busy for 1h in a row, longer than --max-busy 1h: exit code 75');
    expect(terminal).toBe(true);
    const early = decideSettlement({ ...streak, counted: 1 }, reported(done({ exitCode: 75, error: err() })), rules(), NOW, STARTED);
    expect(early).toMatchObject({ terminal: false, settlement: { outcome: 'FAILED', retryAt: NOW + 5_000 } });
  });

  it('a timeout is a timeout, whatever the exit code', () => {
    expect(decideSettlement(busyTask(null), reported(done({ exitCode: 75, error: err() }), 'timeout'), rules(), NOW, STARTED).settlement.outcome).toBe('TIMEOUT');
  });
});
