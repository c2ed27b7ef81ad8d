import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mainIn, startIn } from '../helpers/in-process-cli.js';
import { allAttempts, statusCounts, storedTasks, waitUntil } from '../helpers/json-views.js';
import { projectWithFiles } from '../helpers/project.js';
import { PG_URL, pgSchemas } from '../helpers/pg.js';
import { dbPathIn } from '../helpers/store.js';

/**
 * SPEC §5: every duration works as written up to at least 365 days, or is refused with exit 2
 * above the documented maximum (366d). Node fires any timer longer than 2^31-1 ms (24.8 days)
 * after 1 ms, so each of these ran wrong before the timers were chained.
 */
const DAY = 86_400_000;

/** Four tasks of 0.2 s on two workers: long enough for a timer fired at once to show. */
async function shortBatch(flags: string[]) {
  const p = projectWithFiles(4);
  const r = await mainIn(p.dir, ['run', 'src', '--exec', 'sleep 0.2', '-j', '2', '--retries', '0', ...flags]);
  return { p, r };
}

async function expectAllSucceeded(dir: string): Promise<void> {
  expect(Object.keys(await statusCounts(dir))).toEqual(['SUCCESS']);
  expect([...new Set((await allAttempts(dir)).map((a) => a.outcome))]).toEqual(['SUCCESS']);
}

describe('durations longer than Node timers take (24.8 days) work as written', () => {
  for (const value of ['25d', '366d']) {
    for (const option of ['--timeout', '--max-runtime', '--grace', '--lease', '--progress-interval']) {
      it(`${option} ${value}: a batch of short tasks succeeds as with a short value (exit 0, no overflow warning)`, async () => {
        const { p, r } = await shortBatch([option, value]);
        expect(r.code, r.stderr).toBe(0);
        expect(r.stderr).not.toMatch(/TimeoutOverflowWarning/);
        expect(r.stderr).toMatch(/done: 4 succeeded, 0 failed of 4/);
        await expectAllSucceeded(p.dir);
      });
    }
  }

  it('--progress-interval 25d prints no progress line during a short run (it is not due yet)', async () => {
    const { r } = await shortBatch(['--progress-interval', '25d']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/\d+\/4 done ·/);
  });

  it('--lease 366d: a running task holds its lease for 366 days', async () => {
    const p = projectWithFiles(1);
    const child = startIn(p.dir, ['run', 'src', '--exec', 'sleep 1', '--lease', '366d']);
    const running = async () => (await storedTasks(dbPathIn(p.dir))).filter((t) => t.status === 'RUNNING');
    await waitUntil(async () => (await running()).length === 1, 20_000, 'a running attempt');
    const [row] = await running();
    expect(row!.leaseExpiresAt! - Date.now()).toBeGreaterThan(366 * DAY - 60_000);
    expect(row!.leaseExpiresAt! - Date.now()).toBeLessThanOrEqual(366 * DAY);
    const r = await child.done;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/TimeoutOverflowWarning/);
  });

  for (const value of ['25d', '365d']) {
    it(`--backoff ${value}: a failed attempt's retry is due in ${value}; --no-wait exits 3 leaving it`, async () => {
      const p = projectWithFiles(1);
      const before = Date.now();
      const r = await mainIn(p.dir, ['run', 'src', '--exec', 'exit 1', '--retry-quiet', '--backoff', value, '--max-backoff', value, '--jitter', '0', '--no-wait']);
      expect(r.code, r.stderr).toBe(3);
      expect(r.stderr).not.toMatch(/TimeoutOverflowWarning/);
      const [task] = JSON.parse((await mainIn(p.dir, ['tasks', '--json'])).stdout);
      expect(task).toMatchObject({ status: 'PENDING', attempts: 1 });
      const dueIn = Date.parse(task.nextRunAt) - before;
      const days = Number.parseInt(value, 10);
      expect(dueIn).toBeGreaterThanOrEqual(days * DAY);
      expect(dueIn).toBeLessThan(days * DAY + 60_000);
    });
  }
});

describe('durations above the maximum (366d) are refused', () => {
  it('--timeout 400d is exit 2 naming the option, the maximum and the value; no store is created', async () => {
    const p = projectWithFiles(2);
    const r = await mainIn(p.dir, ['run', 'src', '--exec', 'true', '--timeout', '400d']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--timeout expects a duration of at most 366d; got "400d"/);
    expect(existsSync(join(p.dir, '.splitdance'))).toBe(false);
  });

  it('--max-runtime 2y is exit 2 (1y is fine: 365.25 days)', async () => {
    const p = projectWithFiles(1);
    const r = await mainIn(p.dir, ['run', 'src', '--exec', 'true', '--max-runtime', '2y']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--max-runtime expects a duration of at most 366d; got "2y"/);
    const ok = await mainIn(p.dir, ['run', 'src', '--exec', 'true', '--max-runtime', '1y']);
    expect(ok.code, ok.stderr).toBe(0);
  });

  it('a job file with "timeout": "400d" is exit 2 naming the field, the maximum and the value; no store is created', async () => {
    const p = projectWithFiles(2);
    writeFileSync(join(p.dir, 'splitdance.json'), JSON.stringify({ source: 'src', exec: 'true', timeout: '400d' }));
    const r = await mainIn(p.dir, ['run']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/field "timeout": .*at most 366d.*"400d"/);
    expect(existsSync(join(p.dir, '.splitdance'))).toBe(false);
  });

  it('a stage with "backoff": "400d" in a job file is exit 2 too', async () => {
    const p = projectWithFiles(1);
    const stages = [{ name: 'a', exec: 'true', backoff: '400d' }];
    writeFileSync(join(p.dir, 'splitdance.json'), JSON.stringify({ source: 'src', stages }));
    const r = await mainIn(p.dir, ['run']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/field "stages.0.backoff": .*at most 366d.*"400d"/);
    expect(existsSync(join(p.dir, '.splitdance'))).toBe(false);
  });
});

const URL = PG_URL;
const freshDb = pgSchemas('longdur');

describe.skipIf(!URL)('long durations on a PostgreSQL store', () => {
  it('--backoff 365d: the retry is due in 365 days (next_run_at), shown by tasks --json', async () => {
    const { db } = freshDb();
    const p = projectWithFiles(1);
    const before = Date.now();
    const r = await mainIn(p.dir, ['run', 'src', '--db', db, '--exec', 'exit 1', '--retry-quiet', '--backoff', '365d', '--max-backoff', '365d', '--jitter', '0', '--no-wait']);
    expect(r.code, r.stderr).toBe(3);
    const [row] = await storedTasks(db);
    // The store keeps times on the server's clock (a few ms of offset at most).
    expect(row!.nextRunAt - before).toBeGreaterThan(365 * DAY - 60_000);
    const [task] = JSON.parse((await mainIn(p.dir, ['tasks', '--json', '--db', db])).stdout);
    expect(Date.parse(task.nextRunAt) - before).toBeGreaterThanOrEqual(365 * DAY - 60_000);
    expect(Date.parse(task.nextRunAt) - before).toBeLessThan(365 * DAY + 60_000);
  });

  it('--lease 366d: a running task holds its lease for 366 days; the batch succeeds', async () => {
    const { db } = freshDb();
    const p = projectWithFiles(1);
    const child = startIn(p.dir, ['run', 'src', '--db', db, '--exec', 'sleep 1', '--lease', '366d', '--timeout', '366d', '--grace', '366d']);
    let ended = false;
    void child.done.then(() => (ended = true));
    const before = Date.now();
    let lease: number | null = null;
    while (lease === null && !ended && Date.now() - before < 20_000) {
      const running = (await storedTasks(db)).find((t) => t.status === 'RUNNING');
      if (running) lease = running.leaseExpiresAt;
    }
    expect(lease, 'the lease of the running attempt').not.toBeNull();
    expect(lease! - before).toBeGreaterThan(366 * DAY - 60_000);
    expect(lease! - before).toBeLessThan(366 * DAY + 60_000);
    const r = await child.done;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/TimeoutOverflowWarning/);
  });
});
