import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler, runCli, sleep, startCli, tempDir, waitFor } from '../helpers/cli.js';
import { childrenOf, processesWithEnv } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';
import { countBy, dbPathIn, logEntries, sideEffects, storedAttempts } from '../helpers/store.js';
import { countsIn, succeededSoFar } from '../helpers/read-store.js';
import { statusCounts, tasksJson, waitUntil } from '../helpers/json-views.js';
import { checkInvariants } from './invariants.js';
import { prng, seedFor } from './prng.js';

function withCanaries(p: { dir: string; log: string }, extra: Record<string, string> = {}) {
  const canaries = join(p.dir, 'canaries');
  mkdirSync(canaries, { recursive: true });
  return { SIDE_EFFECT_LOG: p.log, CANARY_DIR: canaries, ...extra };
}


describe('R3: workers SIGKILLed mid-task', () => {
  it('loses nothing; each killed attempt is recorded CRASHED and retried', async () => {
    const seed = seedFor(303);
    const rand = prng(seed);
    const p = projectWithFiles(500);
    const env = withCanaries(p, { SLEEP_MS_RANGE: '2-10' });
    const child = startCli(['run', 'src', '--handler', handler('record'), '-j', '2', '--retries', '5', '--backoff', '10ms', '--quiet'], {
      cwd: p.dir,
      env,
    });
    let kills = 0;
    await waitFor(() => logEntries(p.log).length > 0, 20_000, 'the first attempt');
    while (child.exitCode === null && kills < 12) {
      const workers = childrenOf(child.pid!);
      if (workers.length) {
        process.kill(workers[Math.floor(rand() * workers.length)]!, 'SIGKILL');
        kills++;
      }
      await sleep(60 + rand() * 100);
    }
    const r = await child.result;
    expect(r.code, r.stderr).toBe(0);
    expect(kills).toBeGreaterThan(3);
    const crashed = (await storedAttempts(dbPathIn(p.dir))).filter((a) => a.outcome === 'CRASHED').length;
    expect(crashed).toBeGreaterThan(0);
    expect(crashed).toBeLessThanOrEqual(kills);
    expect(checkInvariants({ dbPath: dbPathIn(p.dir), keys: p.keys, retries: 5, logPath: p.log, kills, concurrency: 1 }), `seed ${seed}`).toEqual([]);
  });
});

describe('R3: workers SIGKILLed while they load the handler', () => {
  it('a worker killed from outside before its handler was ready is replaced, not taken for a handler that cannot load', async () => {
    const p = projectWithFiles(30);
    const child = startCli(['run', 'src', '--handler', handler('slow-load'), '-j', '1', '--retries', '5', '--backoff', '10ms', '--quiet'], {
      cwd: p.dir,
      env: { LOAD_DELAY_MS: '600' },
    });
    // Wait for the first success, so the pool is running (a replacement, not the start-up load).
    await waitUntil(async () => (await succeededSoFar(dbPathIn(p.dir))) > 0, 30_000, 'a first success');
    // Kill the working worker, then each replacement as soon as it exists: it is still inside its
    // 600 ms load. Seven in a row is more than the load failures a handler that cannot load is allowed.
    let previous: number | undefined = childrenOf(child.pid!)[0];
    for (let k = 0; k < 8 && previous !== undefined; k++) {
      process.kill(previous, 'SIGKILL');
      await waitFor(() => childrenOf(child.pid!).some((c) => c !== previous), 20_000, 'a replacement worker');
      previous = childrenOf(child.pid!).find((c) => c !== previous);
    }
    const r = await child.result;
    expect(r.code, r.stderr).toBe(0);
    expect(await statusCounts(p.dir)).toEqual({ SUCCESS: 30 });
  });
});

describe('R7: a poison pill', () => {
  it('kills its worker on every attempt, ends FAILED after 1 + retries attempts; the others are unaffected', async () => {
    const p = projectWithFiles(40);
    const r = await runCli(['run', 'src', '--handler', handler('crash'), '--retries', '2', '--backoff', '10ms', '-j', '2'], {
      cwd: p.dir,
      env: { CRASH_MODE: 'kill', CRASH_KEY: 'f007.log' },
    });
    expect(r.code).toBe(1);
    const rows = (await tasksJson(p.dir)).map(({ key, status, attempts }) => ({ key, status, attempts }));
    expect(rows.filter((t) => t.status !== 'SUCCESS')).toEqual([{ key: 'f007.log', status: 'FAILED', attempts: 3 }]);
    expect(checkInvariants({ dbPath: dbPathIn(p.dir), keys: p.keys, retries: 2, terminal: ['SUCCESS', 'FAILED'] })).toEqual([]);
  });
});

describe('R8: a leaking handler', () => {
  it('is recycled by task count and memory; the coordinator RSS stays flat', async () => {
    const p = projectWithFiles(400);
    const child = startCli(['run', 'src', '--handler', handler('leak'), '-j', '2', '--max-tasks-per-worker', '40', '--max-worker-memory', '150MiB', '--quiet'], {
      cwd: p.dir,
    });
    const rss = () => {
      try {
        return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]) * 1024;
      } catch {
        return 0;
      }
    };
    const done = () => succeededSoFar(dbPathIn(p.dir));
    await waitUntil(async () => existsSync(dbPathIn(p.dir)) && (await done()) >= 100, 60_000, '100 tasks');
    const early = rss();
    await waitUntil(async () => (await done()) >= 380, 60_000, '380 tasks');
    const late = rss();
    const r = await child.result;
    expect(r.code, r.stderr).toBe(0);
    // 400 tasks leaked 800 MB into workers; the coordinator must not have grown with them.
    expect(late - early).toBeLessThan(40 * 1024 * 1024);
    const perWorker = [...countBy(await storedAttempts(dbPathIn(p.dir)), (a) => String(a.pid)).values()];
    expect(Math.max(...perWorker)).toBeLessThanOrEqual(40);
    expect(perWorker.length).toBeGreaterThanOrEqual(10);
  });
});

describe('R10: overlapping runs', () => {
  it('three runs at the same instant, then two right after a SIGKILLed one: each task once, no lock errors', async () => {
    const p = projectWithFiles(120);
    const env = withCanaries(p, { SLEEP_MS: '10' });
    const args = ['run', 'src', '--handler', handler('record'), '-j', '2'];
    const three = await Promise.all([0, 1, 2].map(() => startCli(args, { cwd: p.dir, env }).result));
    for (const r of three) {
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).not.toMatch(/locked|busy|SQLITE/i);
    }
    expect(sideEffects(p.log)).toHaveLength(120);
    expect(checkInvariants({ dbPath: dbPathIn(p.dir), keys: p.keys, retries: 3, logPath: p.log })).toEqual([]);

    const q = projectWithFiles(120);
    const envQ = withCanaries(q, { SLEEP_MS: '20' });
    const argsQ = ['run', 'src', '--handler', handler('record'), '-j', '2'];
    const victim = startCli(argsQ, { cwd: q.dir, env: envQ });
    await sleep(900);
    victim.kill('SIGKILL');
    await victim.result;
    const two = await Promise.all([0, 1].map(() => startCli(argsQ, { cwd: q.dir, env: envQ }).result));
    for (const r of two) expect(r.code, r.stderr).toBe(0);
    expect(checkInvariants({ dbPath: dbPathIn(q.dir), keys: q.keys, retries: 3, logPath: q.log, kills: 1, concurrency: 2 })).toEqual([]);
  });
});

describe('R11: a store locked by a foreign process', () => {
  it('waits the busy timeout, then exits 4 with a clear message and changes nothing', async () => {
    const p = projectWithFiles(3);
    expect((await runCli(['run', 'src', '--exec', 'exit 1', '--retries', '0'], { cwd: p.dir })).code).toBe(1);
    // SQL stays: a foreign process holding the store's write lock is the fault itself.
    const foreign = new Database(dbPathIn(p.dir));
    foreign.exec('BEGIN IMMEDIATE');
    try {
      const t0 = Date.now();
      const r = await runCli(['retry-failed'], { cwd: p.dir, env: { SPLITDANCE_BUSY_TIMEOUT_MS: '1500' } });
      expect(r.code).toBe(4);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(1500);
      expect(r.stderr).toMatch(/store .*splitdance\.db stayed locked by another process for 1500 ms/);
      expect(r.stderr).not.toMatch(/\n\s+at /);
      const run = await runCli(['run', 'src', '--exec', 'true'], { cwd: p.dir, env: { SPLITDANCE_BUSY_TIMEOUT_MS: '1000' } });
      expect(run.code).toBe(4);
      expect(processesWithEnv(p.dir)).toEqual([]);
    } finally {
      foreign.exec('ROLLBACK');
      foreign.close();
    }
    expect(await statusCounts(p.dir)).toEqual({ FAILED: 3 });
  });
});

describe('R14: power loss, approximated by a torn WAL', () => {
  it('after SIGKILL and a WAL cut at a random offset, the rerun holds I1–I3 (repeats allowed, never concurrent)', async () => {
    for (const seed of [seedFor(1401), seedFor(1401) + 1, seedFor(1401) + 2]) {
      const rand = prng(seed);
      const p = projectWithFiles(60);
      const env = withCanaries(p, { SLEEP_MS: '15' });
      const args = ['run', 'src', '--handler', handler('record'), '-j', '2'];
      const victim = startCli(args, { cwd: p.dir, env });
      const target = 5 + Math.floor(rand() * 40);
      await waitFor(() => sideEffects(p.log).length >= target, 20_000, `${target} tasks done`);
      victim.kill('SIGKILL');
      await victim.result;
      const wal = `${dbPathIn(p.dir)}-wal`;
      const size = statSync(wal).size;
      truncateSync(wal, Math.floor(rand() * size));
      const r = await runCli(args, { cwd: p.dir, env });
      expect(r.code, `seed ${seed}: ${r.stderr}`).toBe(0);
      const v = checkInvariants({ dbPath: dbPathIn(p.dir), keys: p.keys, retries: 3, logPath: p.log, historyMayRollBack: true });
      expect(v, `seed ${seed}`).toEqual([]);
    }
  });
});

describe('R15: a file deleted between split and run', () => {
  it('fails its task with the reason; the others succeed', async () => {
    const p = projectWithFiles(4);
    const r = await runCli(['run', 'src', '--exec', `cat {} > /dev/null && rm -f '${join(p.src, 'f003.log')}'`, '-j', '1', '--retries', '0'], {
      cwd: p.dir,
    });
    expect(r.code).toBe(1);
    const rows = (await tasksJson(p.dir)).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    expect(rows.map((x) => x.key)).toEqual(['f000.log', 'f001.log', 'f002.log', 'f003.log']);
    expect(rows.map((x) => x.status)).toEqual(['SUCCESS', 'SUCCESS', 'SUCCESS', 'FAILED']);
    expect(rows[3]!.lastError).toMatch(/No such file or directory/);
  });
});

describe('R16: a name that is not valid UTF-8', () => {
  it('is skipped with a warning naming it; the other files run', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'src'));
    writeFileSync(join(dir, 'src', 'ok.log'), 'x');
    // Node cannot name this file as a string; the shell can.
    execFileSync('/bin/sh', ['-c', `printf x > "$(printf 'src/bad\\377.log')"`], { cwd: dir });
    expect(readdirSync(join(dir, 'src'), { encoding: 'buffer' })).toHaveLength(2);
    const r = await runCli(['run', 'src', '--exec', 'cat {} > /dev/null'], { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/skipped 1 file whose name is not valid UTF-8: .*bad\\xff\.log/);
    expect((await tasksJson(dir)).map((t) => t.key)).toEqual(['ok.log']);
  });
});

describe('R21: security hygiene', () => {
  it('store files are 0600 under umask 022 and secrets in the environment reach neither the store nor the logs', async () => {
    const p = projectWithFiles(3);
    const secret = `s3cr3t-${process.pid}-${Date.now()}`;
    const r = await runCli(['run', 'src', '--exec', 'echo hello {key}; exit 0'], {
      cwd: p.dir,
      env: { API_TOKEN: secret, DATABASE_PASSWORD: secret },
    });
    expect(r.code).toBe(0);
    const folder = join(p.dir, '.splitdance');
    const files: string[] = [];
    const walk = (d: string) => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        const f = join(d, e.name);
        if (e.isDirectory()) {
          expect(statSync(f).mode & 0o777, f).toBe(0o700);
          walk(f);
        } else files.push(f);
      }
    };
    walk(folder);
    expect(files.some((f) => f.endsWith('.log'))).toBe(true);
    for (const f of files) {
      expect(statSync(f).mode & 0o777, f).toBe(0o600);
      expect(readFileSync(f).includes(secret), f).toBe(false);
    }
  });
});

describe('R18: a 1M-line file split by --lines 1 (SPLITDANCE_LONG=1 only)', () => {
  it.runIf(process.env.SPLITDANCE_LONG === '1')('enqueues and runs a million one-line tasks', async () => {
    const dir = tempDir();
    const lines = Array.from({ length: 1_000_000 }, (_, i) => `${i}\n`).join('');
    writeFileSync(join(dir, 'million.txt'), lines);
    const r = await runCli(['run', 'million.txt', '--lines', '1', '--handler', handler('ok'), '-j', '2', '--quiet'], { cwd: dir, timeoutMs: 1_200_000 });
    expect(r.code, r.stderr).toBe(0);
    expect((await countsIn(dbPathIn(dir))).succeeded).toBe(1_000_000);
  }, 1_300_000);
});

describe('R18: scale (CI size; SPLITDANCE_LONG=1 runs 100k files)', () => {
  it('enqueues a large directory in one go, survives a SIGKILL half-way, and resumes', async () => {
    const n = process.env.SPLITDANCE_LONG === '1' ? 100_000 : 10_000;
    const dir = tempDir();
    const src = join(dir, 'src');
    mkdirSync(src);
    for (let i = 0; i < n; i++) {
      const sub = join(src, `d${Math.floor(i / 1000)}`);
      if (i % 1000 === 0) mkdirSync(sub);
      writeFileSync(join(sub, `f${i}`), '');
    }
    const args = ['run', 'src', '--handler', handler('ok'), '-j', '2', '--quiet'];
    const victim = startCli(args, { cwd: dir });
    const db = dbPathIn(dir);
    await waitUntil(async () => (await succeededSoFar(db)) >= n / 2, 60_000, 'half the tasks');
    victim.kill('SIGKILL');
    await victim.result;
    const r = await runCli(args, { cwd: dir, timeoutMs: 120_000 });
    expect(r.code, r.stderr).toBe(0);
    const keys = (await countsIn(db)).succeeded;
    expect(keys).toBe(n);
  }, 180_000);
});
