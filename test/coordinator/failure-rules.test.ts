import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler } from '../helpers/cli.js';
import { mainIn } from '../helpers/in-process-cli.js';
import { PG_URL, pgQuery, pgSchemas } from '../helpers/pg.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn } from '../helpers/store.js';

/** --permanent-errors and --heartbeat-timeout, through the command run in this process, on each store. */

interface Attempt {
  outcome: string;
  error: string | null;
}

const freshPg = pgSchemas('rules');

/** A store for one test: the project's SQLite file, or a fresh PostgreSQL schema. */
interface Store {
  args: string[];
  /** Whether the run wrote anything to the store. */
  touched(dir: string): Promise<boolean>;
}

const STORES: [string, () => Store][] = [
  ['SQLite', () => ({ args: [], touched: async (dir) => existsSync(dbPathIn(dir)) })],
  ...(PG_URL
    ? [
        [
          'PostgreSQL',
          () => {
            const { db, schema } = freshPg();
            return {
              args: ['--db', db],
              touched: async () =>
                (await pgQuery<{ n: string }>('SELECT count(*) AS n FROM information_schema.tables WHERE table_schema = $1', [schema]))[0]!.n !== '0',
            };
          },
        ] as [string, () => Store],
      ]
    : []),
];

const attempts = async (dir: string, store: Store, key: string): Promise<Attempt[]> => {
  const r = await mainIn(dir, ['show', key, '--json', ...store.args]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout).attempts;
};

/** Prints "Invalid header" for f000.log and something else for the rest; fails either way. */
const FAILING = 'case {key} in *f000.log) echo "Invalid header in line 1" >&2; exit 1;; *) echo "connection reset" >&2; exit 1;; esac';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe.each(STORES)('failure rules (%s)', (_name, storeOf) => {
  describe('--permanent-errors', () => {
    it('a backtracking pattern cannot stall the run: stopped at its budget, counted as not matching, retries go on', async () => {
      const store = storeOf();
      const p = projectWithFiles(3);
      // (a+)+$ against 60 a's then "b": 2^60 steps of backtracking, hours on the coordinator's loop.
      // A stalled loop would never return: the test's own time limit is the bound.
      const r = await mainIn(p.dir, ['run', 'src', ...store.args, '--exec', `printf '%060d' 0 | tr 0 a; echo b; exit 1`, '--retry-quiet', '--permanent-errors', '(a+)+$', '--retries', '1', '--backoff', '10ms', '-j', '2']);
      expect(r.code).toBe(1);
      // Not final at the first failure: the pattern never answered, so each task had its retry.
      for (const key of p.keys) expect((await attempts(p.dir, store, key)).map((a) => a.outcome)).toEqual(['FAILED', 'FAILED']);
    }, 90_000);

    it('an attempt whose output matches fails its task after one attempt; another failure is retried', async () => {
      const store = storeOf();
      const p = projectWithFiles(2);
      const r = await mainIn(p.dir, ['run', 'src', ...store.args, '--exec', FAILING, '--permanent-errors', 'Invalid header', '--permanent-errors', '^nothing$', '--retries', '2', '--backoff', '50ms']);
      expect(r.code, r.stderr).toBe(1);
      expect((await attempts(p.dir, store, 'f000.log')).map((a) => a.outcome)).toEqual(['FAILED']);
      expect((await attempts(p.dir, store, 'f001.log')).map((a) => a.outcome)).toEqual(['FAILED', 'FAILED', 'FAILED']);
    });

    it('stored on the batch: a `worker` joining it applies the patterns', async () => {
      const store = storeOf();
      const p = projectWithFiles(2);
      const args = ['--exec', FAILING, '--permanent-errors', 'Invalid header', '--retries', '2', '--backoff', '50ms'];
      const r = await mainIn(p.dir, ['run', 'src', ...store.args, ...args, '--max-runtime', '1ms', '-j', '1']);
      expect(r.code, r.stderr).toBe(3);
      const w = await mainIn(p.dir, ['worker', ...store.args]);
      expect(w.code, w.stderr).toBe(1);
      // An attempt the first run's 1ms limit stopped is INTERRUPTED, uncounted.
      const counted = async (key: string) => (await attempts(p.dir, store, key)).filter((a) => a.outcome !== 'INTERRUPTED').map((a) => a.outcome);
      expect(await counted('f000.log')).toEqual(['FAILED']);
      expect(await counted('f001.log')).toEqual(['FAILED', 'FAILED', 'FAILED']);
    });

    it('a module error matching the pattern is final too', async () => {
      const store = storeOf();
      const p = projectWithFiles(1);
      // fail.mjs throws "cannot process …: boom" every time.
      const r = await mainIn(p.dir, ['run', 'src', ...store.args, '--handler', handler('fail'), '--permanent-errors', 'b[o]+m$', '--backoff', '50ms']);
      expect(r.code, r.stderr).toBe(1);
      expect(await attempts(p.dir, store, 'f000.log')).toHaveLength(1);
    });

    it('the job file field, and a stage field over the job (none)', async () => {
      const store = storeOf();
      const p = projectWithFiles(2);
      writeFileSync(join(p.dir, 'job.json'), JSON.stringify({ source: 'src', exec: FAILING, retries: 1, backoff: '50ms', permanentErrors: ['Invalid header'] }));
      expect((await mainIn(p.dir, ['run', '--job', 'job.json', ...store.args])).code).toBe(1);
      expect(await attempts(p.dir, store, 'f000.log')).toHaveLength(1);
      expect(await attempts(p.dir, store, 'f001.log')).toHaveLength(2);

      const s = projectWithFiles(1);
      const stages = [
        { name: 'strict', exec: FAILING, permanentErrors: ['Invalid header'] },
        { name: 'lax', exec: FAILING },
      ];
      writeFileSync(join(s.dir, 'job.json'), JSON.stringify({ source: 'src', retries: 1, backoff: '50ms', stages }));
      expect((await mainIn(s.dir, ['run', '--job', 'job.json', ...store.args])).code).toBe(1);
      expect(await attempts(s.dir, store, 'strict/f000.log')).toHaveLength(1);
      expect(await attempts(s.dir, store, 'lax/f000.log')).toHaveLength(2);
    });

    it('an invalid pattern is exit 2 naming it, in a flag, a job file or a stage, and nothing is written', async () => {
      const store = storeOf();
      const p = projectWithFiles(1);
      const r = await mainIn(p.dir, ['run', 'src', ...store.args, '--exec', 'true', '--permanent-errors', 'ok', '--permanent-errors', '([']);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('--permanent-errors "([": Invalid regular expression');
      writeFileSync(join(p.dir, 'job.json'), JSON.stringify({ source: 'src', exec: 'true', permanentErrors: ['fine', 'a{2,1}'] }));
      const j = await mainIn(p.dir, ['run', '--job', 'job.json', ...store.args]);
      expect(j.code).toBe(2);
      expect(j.stderr).toMatch(/field "permanentErrors\.1": Invalid regular expression.*\(received "a\{2,1\}"\)/);
      writeFileSync(join(p.dir, 'job.json'), JSON.stringify({ source: 'src', stages: [{ name: 'a', exec: 'true', permanentErrors: ['*'] }] }));
      const s = await mainIn(p.dir, ['run', '--job', 'job.json', ...store.args]);
      expect(s.code).toBe(2);
      expect(s.stderr).toMatch(/field "stages\.0\.permanentErrors\.0": Invalid regular expression/);
      // An empty pattern would match every failure: refused, not taken as "everything".
      const e = await mainIn(p.dir, ['run', 'src', ...store.args, '--exec', 'true', '--permanent-errors', '']);
      expect(e.code).toBe(2);
      expect(e.stderr).toContain('--permanent-errors is empty, which would match every failure');
      writeFileSync(join(p.dir, 'job.json'), JSON.stringify({ source: 'src', exec: 'true', permanentErrors: [''] }));
      const ej = await mainIn(p.dir, ['run', '--job', 'job.json', ...store.args]);
      expect(ej.code).toBe(2);
      expect(ej.stderr).toContain('field "permanentErrors.0": expected a pattern; an empty one would match every failure');
      expect(await store.touched(p.dir)).toBe(false);
    });
  });

  describe('--heartbeat-timeout', () => {
    it('a module that stops calling ctx.heartbeat() (printing all the while) is stopped: TIMEOUT "no heartbeat for 1s"', async () => {
      const store = storeOf();
      const p = projectWithFiles(1);
      const r = await mainIn(p.dir, ['run', 'src', ...store.args, '--handler', handler('heartbeat-then-silent'), '--heartbeat-timeout', '1s', '--retries', '0']);
      expect(r.code, r.stderr).toBe(1);
      expect(await attempts(p.dir, store, 'f000.log')).toMatchObject([{ outcome: 'TIMEOUT', error: 'TIMEOUT: no heartbeat for 1s; killed' }]);
    });

    it('a module that keeps calling ctx.heartbeat() for 3s succeeds', async () => {
      const store = storeOf();
      const p = projectWithFiles(1);
      const r = await mainIn(p.dir, ['run', 'src', ...store.args, '--handler', handler('heartbeat-steady'), '--heartbeat-timeout', '1s', '--retries', '0']);
      expect(r.code, r.stderr).toBe(0);
      expect((await attempts(p.dir, store, 'f000.log')).map((a) => a.outcome)).toEqual(['SUCCESS']);
    });

    it('an exec command that prints then goes silent is killed with its process group: TIMEOUT', async () => {
      const store = storeOf();
      const p = projectWithFiles(1);
      const pidFile = join(p.dir, 'sleep.pid');
      const exec = `echo hi; sh -c 'echo $$ > ${pidFile}; exec sleep 30'`;
      const r = await mainIn(p.dir, ['run', 'src', ...store.args, '--exec', exec, '--heartbeat-timeout', '1s', '--retries', '0']);
      expect(r.code, r.stderr).toBe(1);
      expect(await attempts(p.dir, store, 'f000.log')).toMatchObject([{ outcome: 'TIMEOUT', error: 'TIMEOUT: no heartbeat for 1s; killed' }]);
      expect(alive(Number(readFileSync(pidFile, 'utf8')))).toBe(false);
    });

    it('an exec command that keeps printing (stdout or stderr) runs to its end: SUCCESS', async () => {
      const store = storeOf();
      const p = projectWithFiles(2);
      const exec = 'for i in $(seq 15); do case {key} in f000.log) echo $i;; *) echo $i >&2;; esac; sleep 0.2; done';
      const r = await mainIn(p.dir, ['run', 'src', ...store.args, '--exec', exec, '--heartbeat-timeout', '1s', '--retries', '0']);
      expect(r.code, r.stderr).toBe(0);
      for (const key of p.keys) expect((await attempts(p.dir, store, key)).map((a) => a.outcome)).toEqual(['SUCCESS']);
    });
  });
});
