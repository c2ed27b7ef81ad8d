import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { batchFolderName } from '../../src/store/log-layout.js';
import { jsonOf, mainIn } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { readStore } from '../helpers/read-store.js';
import { dbPathIn, query } from '../helpers/store.js';

describe('failure clusters', () => {
  it('errors differing only by a number or a path share a cluster; retry-failed --cluster resets exactly that cluster', async () => {
    const p = projectWithFiles(6);
    const exec = [
      'case {key} in',
      'f00[01].log) echo ENOENT: no such file /data/in/{stem}.csv >&2; exit 2;;',
      'f00[23].log) echo timeout after {#} ms >&2; exit 3;;',
      'f004.log) echo disk quota exceeded >&2; exit 4;;',
      'esac',
    ].join(' ');
    expect((await mainIn(p.dir, ['run', 'src', '--exec', exec, '--retries', '0'])).code).toBe(1);
    const s = JSON.parse((await mainIn(p.dir, ['status', '--json'])).stdout);
    expect(s.topErrors.map((e: { count: number }) => e.count)).toEqual([2, 2, 1]);
    const enoent = s.topErrors.find((e: { error: string }) => e.error.includes('ENOENT'));
    expect(enoent.cluster).toMatch(/^[0-9a-f]{6}$/);
    const human = await mainIn(p.dir, ['status']);
    expect(human.stdout).toContain(`[${enoent.cluster}] 2 × exit code 2: ENOENT: no such file /data/in/f00`);

    const reset = await mainIn(p.dir, ['retry-failed', '--cluster', enoent.cluster, '--json']);
    expect(JSON.parse(reset.stdout).reset).toBe(2);
    const rows = (await jsonOf<{ key: string; status: string }[]>(p.dir, ['tasks'])).map((t) => ({ task_key: t.key, status: t.status })).sort((a, b) => a.task_key.localeCompare(b.task_key));
    expect(rows.filter((r) => r.status === 'PENDING').map((r) => r.task_key)).toEqual(['f000.log', 'f001.log']);
    expect(rows.filter((r) => r.status === 'FAILED').map((r) => r.task_key)).toEqual(['f002.log', 'f003.log', 'f004.log']);
  });
});

describe('tasks filters', () => {
  it('--status, --key, --error, --slowest, tab-separated when piped', async () => {
    const p = projectWithFiles(5);
    const exec = 'case {key} in f001.log) sleep 0.4;; f003.log) sleep 0.2;; f004.log) echo oops >&2; exit 1;; esac';
    expect((await mainIn(p.dir, ['run', 'src', '--exec', exec, '--retries', '0'])).code).toBe(1);
    const tsv = await mainIn(p.dir, ['tasks', '--status', 'FAILED']);
    expect(tsv.stdout.trim().split('\n')).toHaveLength(1);
    expect(tsv.stdout.split('\t').slice(0, 3)).toEqual(['f004.log', 'FAILED', '1']);
    const slow = JSON.parse((await mainIn(p.dir, ['tasks', '--slowest', '2', '--json'])).stdout);
    expect(slow.map((t: { key: string }) => t.key)).toEqual(['f001.log', 'f003.log']);
    const byKey = JSON.parse((await mainIn(p.dir, ['tasks', '--key', 'f00[34].log', '--json'])).stdout);
    expect(byKey.map((t: { key: string }) => t.key)).toEqual(['f003.log', 'f004.log']);
    const byError = JSON.parse((await mainIn(p.dir, ['tasks', '--error', 'oops', '--json'])).stdout);
    expect(byError).toHaveLength(1);
    expect(byError[0]).toMatchObject({ key: 'f004.log', status: 'FAILED', attempts: 1, lastError: 'exit code 1: oops' });
  });
});

describe('batches and prune', () => {
  it('prune on a store with 3 finished and 1 running batch removes exactly the 3 and their logs', async () => {
    const p = projectWithFiles(3);
    for (const b of ['old-1', 'old-2', 'old-3']) {
      expect((await mainIn(p.dir, ['run', 'src', '--batch', b, '--exec', 'echo output of {key}'])).code).toBe(0);
    }
    // A batch that is not finished: its retries wait an hour.
    expect((await mainIn(p.dir, ['run', 'src', '--batch', 'live', '--exec', 'echo live; exit 1', '--retry-quiet', '--backoff', '1h', '--no-wait'])).code).toBe(3);
    const batches = JSON.parse((await mainIn(p.dir, ['batches', '--json'])).stdout);
    expect(batches.map((b: { batch: string; succeeded: number }) => [b.batch, b.succeeded])).toEqual([
      ['old-1', 3],
      ['old-2', 3],
      ['old-3', 3],
      ['live', 0],
    ]);
    // The store's identity names its log folder (the layout itself, no command shows it).
    const id = await readStore(dbPathIn(p.dir), async (s) => s.identity);
    const logs = join(p.dir, '.splitdance', 'logs', id);
    expect(readdirSync(logs).sort()).toEqual(['live', 'old-1', 'old-2', 'old-3'].map(batchFolderName).sort());
    const none = await mainIn(p.dir, ['prune']); // default 30d: nothing that old
    expect(none.stderr).toMatch(/nothing to prune/);
    // An age is compared with dates, never put in a timer: years are fine, a century the limit.
    expect((await mainIn(p.dir, ['prune', '--older-than', '5y'])).stderr).toMatch(/nothing to prune/);
    const tooOld = await mainIn(p.dir, ['prune', '--older-than', '101y']);
    expect(tooOld.code).toBe(2);
    expect(tooOld.stderr).toMatch(/--older-than expects a duration of at most 100y/);
    const r = await mainIn(p.dir, ['prune', '--older-than', '0s', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.batches.sort()).toEqual(['old-1', 'old-2', 'old-3']);
    expect(out).toMatchObject({ tasks: 9, attempts: 9 });
    expect(out.logBytes).toBeGreaterThan(0);
    expect((await jsonOf<{ batch: string }[]>(p.dir, ['batches'])).map((b) => b.batch)).toEqual(['live']);
    // Every row of the pruned batches' attempts is gone: raw SQL on purpose, since an attempt row
    // left behind without its task (or batch) is one no command or store verb would reach.
    expect(query<{ n: number }>(dbPathIn(p.dir), 'SELECT count(*) AS n FROM attempts')[0]!.n).toBe(3);
    expect(readdirSync(logs)).toEqual([batchFolderName('live')]);
    // The live batch's three attempts' logs, in its worker's segment (store/log-layout.ts).
    const live = readdirSync(join(logs, batchFolderName('live')));
    expect(live.length).toBeGreaterThan(0);
    for (const name of live) expect(name).toMatch(/^seg-[0-9a-z]+-[1-9][0-9]*\.log$/);
  });
});
