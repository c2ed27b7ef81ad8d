// Slot scheduling (src/pool/slots.ts) on plain slot data: which workers are offered attempts, how
// many each holds as its attempts get longer or shorter, and which are idle, stuck or stopped.
import { describe, expect, it } from 'vitest';
import {
  emptyQueue,
  endHead,
  freePlaces,
  hasIdleWorker,
  needsWork,
  queueAttempts,
  stopped,
  stuck,
  takeBack,
  windowOf,
  type WorkerState,
} from '../../src/pool/slots.js';

type TestSlot = WorkerState & { id: string };

const NOW = 1_000_000;

/** A ready worker holding nothing, no duration known yet, its head (if any) started NOW. */
function slot(id: string, given: Partial<WorkerState> = {}): TestSlot {
  return { id, pid: null, queue: [], tasksRun: 0, ready: true, retiring: false, avgMs: null, headSince: NOW, stoppedSince: null, ...given };
}

/** `n` attempts held, tokens 1..n: the first runs, the rest wait. */
const holding = (n: number) => Array.from({ length: n }, (_, i) => i + 1);
const ids = (slots: TestSlot[]) => slots.map((s) => s.id).join(' ');

describe('free slots: one entry per attempt a worker can take now', () => {
  // [case, workers, --max-tasks-per-worker, the entries in order]
  const cases: [string, TestSlot[], number | null, string][] = [
    ['no workers', [], null, ''],
    ['a fresh worker: its first attempt and the next', [slot('a')], null, 'a a'],
    ['holding one: room for its next', [slot('a', { queue: holding(1) })], null, 'a'],
    ['holding its running and next attempt: full', [slot('a', { queue: holding(2) })], null, ''],
    ['still loading its handler: none', [slot('a', { ready: false })], null, ''],
    ['being recycled: none', [slot('a', { retiring: true })], null, ''],
    ['two fresh workers: round by round, not all to the first', [slot('a'), slot('b')], null, 'a b a b'],
    [
      'short attempts (1 ms, window 5) beside a fresh worker: by how soon each place runs, the idle worker first, until each is full',
      [slot('a', { avgMs: 1, queue: holding(1) }), slot('b')],
      null,
      'b a b a a a',
    ],
    ['a worker busy beside one just loaded: the idle one first, then the places behind each', [slot('a', { queue: holding(1) }), slot('b')], null, 'b a b'],
    ['a loading and a recycled worker are passed over', [slot('a', { ready: false }), slot('b', { retiring: true }), slot('c')], null, 'c c'],
    ['an attempt running far longer than usual: nothing behind it', [slot('a', { avgMs: 10, queue: holding(1), headSince: NOW - 100 }), slot('b')], null, 'b b'],
    ['--max-tasks-per-worker: no more than it has left (1 of 3)', [slot('a', { avgMs: 0.1, tasksRun: 2 })], 3, 'a'],
    ['--max-tasks-per-worker: 2 of 3 left, one held', [slot('a', { avgMs: 0.1, tasksRun: 1, queue: holding(1) })], 3, 'a'],
    ['--max-tasks-per-worker used up: still its one attempt (it retires once done)', [slot('a', { avgMs: 0.1, tasksRun: 3 })], 3, 'a'],
    ['--max-tasks-per-worker 0 is no limit', [slot('a', { avgMs: 1, tasksRun: 9 })], 0, 'a a a a a'],
    ['very short attempts: at most 64 held in all', [slot('a', { avgMs: 0.001, queue: holding(60) })], null, 'a a a a'],
  ];
  for (const [name, workers, maxTasks, expected] of cases) {
    it(`${name} → [${expected}]`, () => {
      expect(ids(freePlaces(workers, maxTasks, NOW))).toBe(expected);
    });
  }

  // While the pool grows, nothing queues behind a running attempt: the workers still loading take it.
  it('capped at one place a worker (the pool growing): only the idle workers, once each', () => {
    expect(ids(freePlaces([slot('a', { queue: holding(1) }), slot('b'), slot('c', { avgMs: 1 })], null, NOW, 1))).toBe('b c');
  });

  // Places of many tasks each (a group's): a slot holds 64 tasks at most, or two groups.
  describe('places of many tasks each: bounded by the tasks a worker holds', () => {
    /** A fast worker (its window 64 attempts) holding these attempts, each of that many tasks. */
    function fast(sizes: number[]): TestSlot {
      const s = slot('a', { avgMs: 0.01 });
      queueAttempts(s, sizes.map((_, i) => i + 1), NOW, sizes);
      return s;
    }
    const placesOf = (s: TestSlot, perPlace: number) => freePlaces([s], null, NOW, null, perPlace).length;

    it('one task a place: the window alone, as without groups (64)', () => {
      expect(placesOf(fast([]), 1)).toBe(64);
      expect(placesOf(fast(Array<number>(40).fill(1)), 1)).toBe(24);
    });
    it('groups of 64: the running one and the next, whatever the window', () => {
      expect(placesOf(fast([]), 64)).toBe(2);
      expect(placesOf(fast([64]), 64)).toBe(1);
      expect(placesOf(fast([64, 64]), 64)).toBe(0);
      expect(placesOf(fast([10]), 64)).toBe(1); // a claim that came up short: what it holds counts
    });
    it('groups of 8: eight places, 64 tasks', () => {
      expect(placesOf(fast([]), 8)).toBe(8);
      expect(placesOf(fast([8, 8, 8]), 8)).toBe(5);
    });
    it('single attempts of a grouped batch (another stage, halves of a failed group) keep their look-ahead', () => {
      expect(placesOf(fast(Array<number>(40).fill(1)), 64)).toBe(1);
      expect(placesOf(fast(Array<number>(100).fill(1)), 64)).toBe(0);
    });
    it('groups bigger than 32: two places at least (--max-items 1024 holds 2,048)', () => {
      expect(placesOf(fast([]), 1024)).toBe(2);
      expect(placesOf(fast([1024]), 1024)).toBe(1);
    });
    it('what ends, is taken back or dies with its worker no longer counts', () => {
      const s = fast([64, 64]);
      expect(endHead(s, 1, 1, NOW)).toBe(true);
      expect(placesOf(s, 64)).toBe(1);
      expect(takeBack(s, [2])).toEqual([2]);
      expect(placesOf(s, 64)).toBe(2);
      queueAttempts(s, [3, 4], NOW, [64, 64]);
      emptyQueue(s, new Set());
      expect(placesOf(s, 64)).toBe(2);
    });
  });

  it('takes the workers from any iterable and returns them as given (the pool passes its Set)', () => {
    const a = slot('a');
    expect(freePlaces(new Set([a]), null, NOW)[0]).toBe(a);
  });
});

describe("a worker's window as its attempts get longer, then shorter", () => {
  /** The window after attempts of these durations (ms), each ended as the next started, read at that moment. */
  function windowAfter(durations: number[]): number {
    const s = slot('a');
    let now = NOW;
    for (const [i, ms] of durations.entries()) {
      queueAttempts(s, [i + 1], now);
      now += ms;
      expect(endHead(s, i + 1, ms, now)).toBe(true);
    }
    return windowOf(s, null, now);
  }

  // [case, durations in order, window]
  const cases: [string, number[], number][] = [
    ['nothing known yet: its attempt and one next', [], 2],
    ['1 ms attempts: about 4 ms queued', [1, 1, 1], 5],
    ['0.5 ms attempts', [0.5], 9],
    ['one 40 ms attempt after a 1 ms one: the average (8.8 ms) leaves one next', [1, 40], 2],
    ['long attempts: one next, however long', [40, 60_000, 3_600_000], 2],
    ['long, then 14 short ones: the average (2.2 ms) still leaves one next', [40, ...Array<number>(14).fill(0.5)], 2],
    ['long, then 15 short ones: two next', [40, ...Array<number>(15).fill(0.5)], 3],
    ['long, then 20 short ones', [40, ...Array<number>(20).fill(0.5)], 5],
    ['long, then 30 short ones', [40, ...Array<number>(30).fill(0.5)], 8],
  ];
  for (const [name, durations, expected] of cases) {
    it(`${name} → ${expected}`, () => {
      expect(windowAfter(durations)).toBe(expected);
    });
  }

  it('shrinks to its running attempt once that runs far longer than usual, and free slots skip it', () => {
    const s = slot('a', { avgMs: 10, queue: holding(1), headSince: NOW });
    // Slow means longer than 3 × 10 ms + 4 ms.
    expect(windowOf(s, null, NOW + 34)).toBe(2);
    expect(ids(freePlaces([s], null, NOW + 34))).toBe('a');
    expect(windowOf(s, null, NOW + 35)).toBe(1);
    expect(ids(freePlaces([s], null, NOW + 35))).toBe('');
  });

  it('an idle worker is never slow, however long ago its last attempt began', () => {
    expect(windowOf(slot('a', { avgMs: 10, headSince: NOW - 60_000 }), null, NOW)).toBe(2);
  });
});

describe('needsWork: some worker holds no next attempt', () => {
  const cases: [string, TestSlot[], boolean][] = [
    ['no workers', [], false],
    ['an idle worker', [slot('a')], true],
    ['one running its attempt, none next', [slot('a', { queue: holding(1) })], true],
    ['every worker has its next', [slot('a', { queue: holding(2) }), slot('b', { queue: holding(3) })], false],
    ['one of two has no next', [slot('a', { queue: holding(2) }), slot('b', { queue: holding(1) })], true],
    ['only a worker still loading', [slot('a', { ready: false })], false],
    ['only a worker being recycled', [slot('a', { retiring: true })], false],
  ];
  for (const [name, workers, expected] of cases) {
    it(`${name} → ${expected}`, () => {
      expect(needsWork(workers)).toBe(expected);
    });
  }
});

describe('hasIdleWorker: some worker has nothing to do', () => {
  const cases: [string, TestSlot[], boolean][] = [
    ['no workers', [], false],
    ['an idle worker', [slot('a')], true],
    ['one running an attempt', [slot('a', { queue: holding(1) })], false],
    ['one busy, one idle', [slot('a', { queue: holding(2) }), slot('b')], true],
    ['idle but still loading', [slot('a', { ready: false })], false],
    ['idle but being recycled', [slot('a', { retiring: true })], false],
  ];
  for (const [name, workers, expected] of cases) {
    it(`${name} → ${expected}`, () => {
      expect(hasIdleWorker(workers)).toBe(expected);
    });
  }
});

describe('stuck: attempts queued behind a long one while another worker is idle', () => {
  const long = (given: Partial<WorkerState> = {}) => slot('a', { avgMs: 10, queue: holding(3), headSince: NOW - 2000, ...given });
  // [case, workers, the stuck ones] for stuck(1000 ms)
  const cases: [string, TestSlot[], string][] = [
    ['running 2 s with two waiting, and an idle worker', [long(), slot('b')], 'a'],
    ['no idle worker to take them', [long(), slot('b', { queue: holding(1) })], ''],
    ['the only idle worker is being recycled', [long(), slot('b', { retiring: true })], ''],
    ['the only idle worker is still loading', [long(), slot('b', { ready: false })], ''],
    ['nothing waits behind it', [long({ queue: holding(1) }), slot('b')], ''],
    ['running 0.5 s: not yet', [long({ headSince: NOW - 500 }), slot('b')], ''],
    ['running 2 s, but its attempts usually take 0.8 s (3 × 0.8 s > 2 s)', [long({ avgMs: 800 }), slot('b')], ''],
    ['running 3 s, more than 3 × its usual 0.8 s', [long({ avgMs: 800, headSince: NOW - 3000 }), slot('b')], 'a'],
    ['two stuck workers, one idle', [long(), slot('b'), { ...long(), id: 'c' }], 'a c'],
  ];
  for (const [name, workers, expected] of cases) {
    it(`${name} → [${expected}]`, () => {
      expect(ids(stuck(workers, 1000, NOW))).toBe(expected);
    });
  }
});

describe('stopped: a worker whose process has been stopped a while, holding attempts', () => {
  /** A probe that says which pids are stopped now, and records which it was asked about. */
  function probe(stoppedPids: Set<number>) {
    const asked: number[] = [];
    return { asked, isStopped: (pid: number) => (asked.push(pid), stoppedPids.has(pid)) };
  }

  it('is reported once stopped for `ms`, counted from the first poll that saw it stopped', () => {
    const a = slot('a', { pid: 10, queue: holding(1) });
    const b = slot('b', { pid: 11, queue: holding(1) });
    const p = probe(new Set([10]));
    expect(ids(stopped([a, b], 1000, 5000, p.isStopped))).toBe('');
    expect(a.stoppedSince).toBe(5000);
    expect(b.stoppedSince).toBe(null);
    expect(ids(stopped([a, b], 1000, 5999, p.isStopped))).toBe('');
    expect(ids(stopped([a, b], 1000, 6000, p.isStopped))).toBe('a');
    expect(ids(stopped([a, b], 1000, 9000, p.isStopped))).toBe('a');
  });

  it('a worker that goes on again starts from nothing when stopped again', () => {
    const a = slot('a', { pid: 10, queue: holding(1) });
    const pids = new Set([10]);
    const p = probe(pids);
    stopped([a], 1000, 5000, p.isStopped);
    pids.delete(10);
    expect(ids(stopped([a], 1000, 5500, p.isStopped))).toBe('');
    expect(a.stoppedSince).toBe(null);
    pids.add(10);
    expect(ids(stopped([a], 1000, 6000, p.isStopped))).toBe('');
    expect(ids(stopped([a], 1000, 6500, p.isStopped))).toBe('');
    expect(ids(stopped([a], 1000, 7000, p.isStopped))).toBe('a');
  });

  it('a worker holding nothing, or without a process, is not looked at and not reported', () => {
    const idle = slot('idle', { pid: 10, stoppedSince: 1000 });
    const noPid = slot('nopid', { pid: null, queue: holding(2) });
    const p = probe(new Set([10]));
    expect(ids(stopped([idle, noPid], 1000, 5000, p.isStopped))).toBe('');
    expect(p.asked).toEqual([]);
    // Stopped while it held nothing says nothing: its count starts again.
    expect(idle.stoppedSince).toBe(null);
  });

  it('ms 0: reported at the first poll that sees it stopped', () => {
    const p = probe(new Set([10]));
    expect(ids(stopped([slot('a', { pid: 10, queue: holding(1) })], 0, 5000, p.isStopped))).toBe('a');
  });
});

describe("a worker's queue", () => {
  it('queued attempts go after those it holds; the clock of the head starts only on an empty worker', () => {
    const s = slot('a', { headSince: 0 });
    queueAttempts(s, [7, 8], NOW);
    expect(s.queue).toEqual([7, 8]);
    expect(s.headSince).toBe(NOW);
    queueAttempts(s, [9], NOW + 50);
    expect(s.queue).toEqual([7, 8, 9]);
    expect(s.headSince).toBe(NOW);
  });

  it('ending the head counts it, starts the next one now and updates the average', () => {
    const s = slot('a', { queue: [7, 8], avgMs: 10, tasksRun: 4 });
    expect(endHead(s, 7, 20, NOW + 20)).toBe(true);
    expect(s).toMatchObject({ queue: [8], headSince: NOW + 20, tasksRun: 5, avgMs: 12 });
  });

  it('an end reported for an attempt that is not the head changes nothing', () => {
    const s = slot('a', { queue: [7, 8], avgMs: 10, tasksRun: 4 });
    expect(endHead(s, 8, 20, NOW + 20)).toBe(false);
    expect(endHead(slot('b'), 1, 20, NOW + 20)).toBe(false);
    expect(s).toMatchObject({ queue: [7, 8], headSince: NOW, tasksRun: 4, avgMs: 10 });
  });

  it('taking back returns only the attempts it held, and keeps the others in order', () => {
    const s = slot('a', { queue: [7, 8, 9, 10] });
    expect(takeBack(s, [10, 8, 42])).toEqual([10, 8]);
    expect(s.queue).toEqual([7, 9]);
  });

  it('a dead worker: its head and the attempts it said started ran; the rest never did', () => {
    const s = slot('a', { queue: [7, 8, 9, 10] });
    expect(emptyQueue(s, new Set([9]))).toEqual({ running: [7, 9], queued: [8, 10] });
    expect(s.queue).toEqual([]);
    expect(emptyQueue(slot('b'), new Set())).toEqual({ running: [], queued: [] });
  });
});
