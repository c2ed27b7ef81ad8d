import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';
import { mainIn, mainInProcessEnv } from '../helpers/in-process-cli.js';
import { PG_URL, pgSchemas } from '../helpers/pg.js';
import { tasksIn } from '../helpers/read-store.js';
import { query } from '../helpers/store.js';

// --adaptive (SPEC §10): a run finds how many attempts a service takes by AIMD on its busy
// answers. The service here takes 2 requests at once, each for 60 ms, and answers 503 (busy)
// at once to a third. The handler turns a 503 into RetryLater, so no answer spends an attempt.

const newSchema = pgSchemas('sd_adaptive');
const STORES = [{ store: 'SQLite', db: (): string[] => [] }, ...(PG_URL ? [{ store: 'PostgreSQL', db: () => ['--db', newSchema().db] }] : [])];
const HANDLER = join(ROOT, 'fixtures/handlers/busy-service.mjs');

function project(n: number) {
  const dir = mkdtempSync(join(tmpdir(), 'sd-adaptive-'));
  mkdirSync(join(dir, 'src'));
  for (let i = 0; i < n; i++) writeFileSync(join(dir, 'src', `f${String(i).padStart(2, '0')}`), `${i}\n`);
  return { dir, dbPath: (db: string[]) => db[1] ?? join(dir, '.splitdance', 'splitdance.db') };
}

let servers: Server[] = [];
afterEach(() => {
  for (const s of servers) s.close();
  servers = [];
});

/** A loopback service that serves `capacity` requests at once, each for `holdMs`; one more is answered 503 at once. */
async function serviceWithCapacity(capacity: number, holdMs: number) {
  const seen = { ok: 0, busy: 0, inFlight: 0 };
  const server = createServer((_req, res) => {
    if (seen.inFlight >= capacity) {
      seen.busy++;
      res.writeHead(503).end('busy');
      return;
    }
    seen.inFlight++;
    setTimeout(() => {
      seen.inFlight--;
      seen.ok++;
      res.writeHead(200).end('ok');
    }, holdMs);
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

describe.each(STORES)('--adaptive on $store', ({ db: dbFor }) => {
  it('-j 8 against a service that takes 2 at once: a handful of busy answers where plain -j 8 gets dozens; every task SUCCESS on one charged attempt', async () => {
    const n = 60;
    const run = async (extra: string[]) => {
      const p = project(n);
      const db = dbFor();
      const service = await serviceWithCapacity(2, 60);
      const r = await mainInProcessEnv(p.dir, ['run', 'src', '--handler', HANDLER, '-j', '8', '--retries', '0', '--backoff', '20ms', ...extra, ...db], { BUSY_SERVICE: service.url });
      expect(r.code, r.stderr).toBe(0);
      const tasks = await tasksIn(p.dbPath(db));
      expect(tasks.map((t) => [t.status, t.attempts])).toEqual(Array(n).fill(['SUCCESS', 1]));
      expect(service.seen.ok).toBe(n);
      return { busy: service.seen.busy, stderr: r.stderr };
    };
    const adaptive = await run(['--adaptive']);
    // Each busy answer is a probe one above the level that held (the level climbs one at a
    // time, cut at once); the probes get rarer each time the same level proves too much: about
    // five in 60 successes. Twice that for answers that race a cut.
    expect(adaptive.busy).toBeLessThanOrEqual(15);
    expect(adaptive.stderr).toMatch(/^--adaptive: an attempt ended BUSY: at most \d of 8 running at once, [\d.]+ starts\/s; growing back as attempts succeed$/m);
    const plain = await run([]);
    expect(plain.busy).toBeGreaterThan(2 * adaptive.busy);
  }, 150_000);
});

describe('--adaptive: what status shows, and set', () => {
  it("status --json lists the run's level while it runs, none after; the human report says it in one line", async () => {
    const p = project(40);
    const service = await serviceWithCapacity(2, 100);
    const running = mainInProcessEnv(p.dir, ['run', 'src', '--handler', HANDLER, '-j', '6', '--adaptive', '--retries', '0', '--backoff', '20ms'], { BUSY_SERVICE: service.url });
    let watching: Promise<{ code: number; stdout: string }> | undefined;
    let levels: { level: number; max: number }[] = [];
    let human = '';
    for (let i = 0; i < 400 && levels.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 25));
      const s = await mainIn(p.dir, ['status', '--json']);
      if (s.code === 3) {
        levels = (JSON.parse(s.stdout) as { adaptive: { level: number; max: number }[] }).adaptive;
        if (levels.length) {
          human = (await mainIn(p.dir, ['status'])).stdout;
          watching = mainIn(p.dir, ['watch', '--interval', '100ms']); // to a pipe: one plain line per look
        }
      }
    }
    expect(levels).toHaveLength(1);
    expect(levels[0]!.max).toBe(6);
    expect(levels[0]!.level).toBeGreaterThanOrEqual(1);
    expect(levels[0]!.level).toBeLessThanOrEqual(6);
    expect(human).toMatch(/^--adaptive: at most [1-6] of 6 attempts running at once(, [\d.]+ starts\/s)?$/m);
    expect((await running).code).toBe(0);
    const watched = await watching!;
    expect(watched.code).toBe(0);
    expect(watched.stdout).toMatch(/ queued; --adaptive [1-6]\/6; /);
    // Removed at the run's end (status, showing only open batches' levels, would not tell).
    expect(query(p.dbPath([]), 'SELECT owner FROM adaptive_levels')).toEqual([]);
  }, 120_000);

  it('set --adaptive on a running batch: the run follows it at its next look at the batch (its level shows); set --no-adaptive takes it back', async () => {
    const p = project(80);
    const service = await serviceWithCapacity(2, 100);
    const running = mainInProcessEnv(p.dir, ['run', 'src', '--handler', HANDLER, '-j', '4', '--retries', '0', '--backoff', '50ms'], { BUSY_SERVICE: service.url });
    const levels = async () => {
      const s = await mainIn(p.dir, ['status', '--json']);
      return s.code === 3 ? (JSON.parse(s.stdout) as { adaptive: unknown[] }).adaptive.length : -1;
    };
    const until = async (want: number) => {
      for (let i = 0; i < 400; i++) {
        if ((await levels()) === want) return true;
        await new Promise((r) => setTimeout(r, 25));
      }
      return false;
    };
    expect(await until(0)).toBe(true); // running, no level: not adaptive
    const on = await mainIn(p.dir, ['set', '--adaptive', '--json']);
    expect(on.code, on.stderr).toBe(0);
    expect(JSON.parse(on.stdout)).toMatchObject({ adaptive: true });
    expect(await until(1)).toBe(true);
    const off = await mainIn(p.dir, ['set', '--no-adaptive']);
    expect(off.stderr).not.toContain('--adaptive');
    expect(await until(0)).toBe(true);
    expect((await running).code).toBe(0);
  }, 120_000);
});
