import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';
import { mainIn, mainInProcessEnv } from '../helpers/in-process-cli.js';
import { PG_URL, pgSchemas } from '../helpers/pg.js';
import { attemptsIn, tasksIn } from '../helpers/read-store.js';

// "Busy, try later" (SPEC §10): an --exec exit code in --busy-codes (75 by default) or a
// handler's RetryLater puts the task back without spending an attempt, bounded by --max-busy.
// Run with --retries 0, so a busy answer that spent an attempt would end its task FAILED.

const newSchema = pgSchemas('sd_busy');
const STORES = [{ store: 'SQLite', db: (): string[] => [] }, ...(PG_URL ? [{ store: 'PostgreSQL', db: () => ['--db', newSchema().db] }] : [])];

function project(n: number) {
  const dir = mkdtempSync(join(tmpdir(), 'sd-busy-'));
  mkdirSync(join(dir, 'src'));
  for (let i = 0; i < n; i++) writeFileSync(join(dir, 'src', `f${String(i).padStart(2, '0')}`), `${i}\n`);
  return { dir, dbPath: (db: string[]) => db[1] ?? join(dir, '.splitdance', 'splitdance.db') };
}

/** A script that answers busy (exit 75, a line on stderr) the first `busyCalls` times it is called with a key, logging each call's keys. */
function busyScript(dir: string, busyCalls: number): string {
  const script = join(dir, 'call.sh');
  writeFileSync(
    script,
    [
      '#!/bin/sh',
      'cd "$(dirname "$0")"',
      'echo "$(for f in "$@"; do basename "$f"; done | tr "\\n" " ")" >> calls.log',
      `n=$(cat "count-$(basename "$1")" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "count-$(basename "$1")"`,
      `if [ $n -le ${busyCalls} ]; then echo "service busy" >&2; exit 75; fi`,
      '',
    ].join('\n'),
  );
  chmodSync(script, 0o755);
  return script;
}

let server: Server | undefined;
afterEach(() => server?.close());

/** A loopback service that answers 503 (busy) to the first call for each key, then 200. */
async function serviceBusyOnFirstCall(): Promise<{ url: string; calls: Map<string, number> }> {
  const calls = new Map<string, number>();
  server = createServer((req, res) => {
    const key = decodeURIComponent(req.url!.slice(1));
    const n = (calls.get(key) ?? 0) + 1;
    calls.set(key, n);
    res.writeHead(n === 1 ? 503 : 200).end(n === 1 ? 'busy' : `ok ${key}`);
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, calls };
}

describe.each(STORES)('busy, try later on $store', ({ db: dbFor }) => {
  it("a handler's RetryLater against a busy loopback service: every task succeeds on its next attempt, none charged", async () => {
    const p = project(8);
    const db = dbFor();
    const service = await serviceBusyOnFirstCall();
    const handler = join(ROOT, 'fixtures/handlers/busy-service.mjs');
    // The workers read the service's address from the environment they are started with.
    const r = await mainInProcessEnv(p.dir, ['run', 'src', '--handler', handler, '-j', '3', '--retries', '0', '--backoff', '20ms', ...db], { BUSY_SERVICE: service.url });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/^busy f\d\d: busy: RetryLater: the service is busy \(503\); tried again in \d+ms, no attempt spent/m);
    expect([...service.calls.values()]).toEqual(Array(8).fill(2));
    const attempts = await attemptsIn(p.dbPath(db));
    for (const t of await tasksIn(p.dbPath(db))) {
      expect(t).toMatchObject({ status: 'SUCCESS', attempts: 1 });
      expect(attempts.filter((a) => a.key === t.key).map((a) => [a.attempt, a.outcome])).toEqual([
        [1, 'BUSY'],
        [2, 'SUCCESS'],
      ]);
    }
    const show = await mainIn(p.dir, ['show', 'f00', ...db]);
    expect(show.stdout).toMatch(/#1 .* BUSY .*\n\s+error: busy: RetryLater: the service is busy \(503\)/);
  });

  it('an exec exit 75 in a group of 4: the group waits whole (never split) and runs again, uncharged', async () => {
    const p = project(8);
    const db = dbFor();
    const script = busyScript(p.dir, 1);
    const r = await mainIn(p.dir, ['run', 'src', '--exec', `${script} {}`, '-n', '4', '-j', '1', '--retries', '0', '--backoff', '20ms', ...db]);
    expect(r.code, r.stderr).toBe(0);
    const calls = readFileSync(join(p.dir, 'calls.log'), 'utf8').trim().split('\n');
    // Two groups, each called twice with its four items: busy, then done; no halves.
    expect(calls).toHaveLength(4);
    for (const c of calls) expect(c.trim().split(' ')).toHaveLength(4);
    expect((await tasksIn(p.dbPath(db))).every((t) => t.status === 'SUCCESS' && t.attempts === 1)).toBe(true);
  });
});

describe('busy, try later: the bound and the flags', () => {
  it('busy longer than --max-busy in a row is a failure: charged, retried, then FAILED naming the bound', async () => {
    const p = project(1);
    const script = busyScript(p.dir, 1_000_000);
    const r = await mainIn(p.dir, ['run', 'src', '--exec', `${script} {}`, '--retries', '1', '--backoff', '30ms', '--max-busy', '200ms']);
    expect(r.code).toBe(1);
    const [t] = await tasksIn(p.dbPath([]));
    expect(t).toMatchObject({ status: 'FAILED', attempts: 2 });
    expect(t!.lastError).toMatch(/^busy for \d+ms in a row, longer than --max-busy 200ms: exit code 75/);
    const outcomes = (await attemptsIn(p.dbPath([]))).map((a) => a.outcome);
    expect(outcomes.filter((o) => o === 'FAILED')).toHaveLength(2);
    expect(outcomes.filter((o) => o === 'BUSY').length).toBeGreaterThanOrEqual(2);
  });

  it('--busy-codes none: exit 75 is a failure like any other; a code in both lists is exit 2 before anything is written', async () => {
    const p = project(1);
    const script = busyScript(p.dir, 1);
    const both = await mainIn(p.dir, ['run', 'src', '--exec', `${script} {}`, '--permanent-codes', '75']);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('exit code 75 is in both --permanent-codes and --busy-codes (default 75)');
    expect(existsSync(join(p.dir, '.splitdance'))).toBe(false);
    expect((await mainIn(p.dir, ['run', 'src', '--exec', `${script} {}`, '--busy-codes', 'x'])).stderr).toContain('--busy-codes expects exit codes 1-255');
    const r = await mainIn(p.dir, ['run', 'src', '--exec', `${script} {}`, '--busy-codes', 'none', '--retries', '0']);
    expect(r.code).toBe(1);
    expect((await attemptsIn(p.dbPath([]))).map((a) => a.outcome)).toEqual(['FAILED']);
  });
});
