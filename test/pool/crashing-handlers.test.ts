import { describe, expect, it } from 'vitest';
import { handler } from '../helpers/cli.js';
import { mainInProcessEnv } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { attemptsIn, tasksIn } from '../helpers/read-store.js';
import { dbPathIn } from '../helpers/store.js';

// A handler that ends its worker process (SPEC §5): the attempt is CRASHED, the worker replaced.

describe('handlers that kill their worker', () => {
  for (const mode of ['exit0', 'exit1', 'throw', 'reject', 'abort', 'kill']) {
    it(`${mode}: never SUCCESS, recorded CRASHED, the worker is replaced, other tasks still run`, async () => {
      const p = projectWithFiles(3);
      const r = await mainInProcessEnv(p.dir, ['run', 'src', '--handler', handler('crash'), '--retries', '1', '--backoff', '10ms', '-j', '2'], { CRASH_MODE: mode });
      expect(r.code).toBe(1);
      const rows = await tasksIn(dbPathIn(p.dir));
      expect(rows.every((t) => t.status === 'FAILED' && t.attempts === 2)).toBe(true);
      // Attempts queued behind a crashing one never started: INTERRUPTED, not counted (SPEC §5).
      const attempts = await attemptsIn(dbPathIn(p.dir));
      const outcomes = [...new Set(attempts.map((a) => a.outcome!))].sort().map((outcome) => ({ outcome, n: attempts.filter((a) => a.outcome === outcome).length }));
      expect(outcomes.map((o) => o.outcome).filter((o) => o !== 'INTERRUPTED')).toEqual(['CRASHED']);
      expect(outcomes.find((o) => o.outcome === 'CRASHED')!.n).toBe(6);
      expect(new Set(attempts.map((a) => a.pid)).size).toBeGreaterThan(2); // replacements ran the later attempts
    });
  }
});
