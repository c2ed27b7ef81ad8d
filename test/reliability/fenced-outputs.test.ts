import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { handler, runCli, sleep, startCli, waitFor } from '../helpers/cli.js';
import { processesWithEnv } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';
import { storedTasks } from '../helpers/json-views.js';
import { PG_URL, pgSchemas } from '../helpers/pg.js';
import { attemptsIn, pendingOutputsIn, tasksIn } from '../helpers/read-store.js';
import { dbPathIn } from '../helpers/store.js';

// RELIABILITY R30: fencing covers declared outputs. A remote host's run (SPLITDANCE_HOST_ID),
// frozen whole with SIGSTOP past its lease in the middle of writing an output; another host
// takes the task over and commits; the first wakes and finishes writing. Its commit is fenced
// off, so it never renames: the output path holds the committed attempt's file.

const frozen: number[] = [];
afterEach(() => {
  for (const pid of frozen.splice(0)) signal(pid, 'SIGCONT');
});

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // gone already
  }
}

const freshPg = pgSchemas('fenced');
/** Both stores: SQLite in the project's folder, and a fresh schema of the shared PostgreSQL server (where other hosts really are). */
const STORES = [
  { store: 'SQLite', db: (dir: string) => dbPathIn(dir) },
  ...(PG_URL ? [{ store: 'PostgreSQL', db: () => freshPg().db }] : []),
];

describe.each(STORES)('a frozen remote owner and declared outputs ($store)', ({ db: dbFor }) => {
  it('woken after another host committed the task, its fenced-off attempt never puts its file at the output path', async () => {
    const p = projectWithFiles(1);
    const out = join(p.dir, 'out');
    const db = dbFor(p.dir);
    const args = ['run', 'src', '--handler', handler('write-in-two-parts'), '--output', 'out/{rel}', '-j', '1', '--lease', '1s', '--quiet', '--db', db];
    const marker = `${p.dir}#host-a`; // inherited by every process of host A's tree
    const a = startCli(args.filter((x) => x !== '--quiet'), { cwd: p.dir, env: { SPLITDANCE_HOST_ID: 'host-a', SIM_MACHINE: marker, OUT_TEXT: 'from A\nA again\n', SLEEP_MS: '1500' } });
    const temps = () => readdirSafe(out).filter((f) => f.endsWith('.tmp'));
    await waitFor(() => temps().some((f) => readFileSync(join(out, f), 'utf8') === 'from A\n'), 20_000, 'host A to write the first part of its output');
    // Host A freezes whole (coordinator and worker) half-way through its output.
    for (const pid of processesWithEnv(marker)) {
      signal(pid, 'SIGSTOP');
      frozen.push(pid);
    }
    await sleep(1600); // past its 1 s lease

    const b = await runCli(args, { cwd: p.dir, env: { SPLITDANCE_HOST_ID: 'host-b', OUT_TEXT: 'from B\n', SLEEP_MS: '10' } });
    expect(b.code, b.stderr).toBe(0);
    const output = join(out, p.keys[0]!);
    expect(readFileSync(output, 'utf8')).toBe('from B\n');

    // Host A wakes, its worker first: the handler finishes writing and reports a success that
    // can no longer commit — its coordinator, woken a moment later, learns so only then.
    for (const pid of frozen.filter((pid) => pid !== a.pid)) signal(pid, 'SIGCONT');
    await sleep(1000);
    for (const pid of frozen.splice(0)) signal(pid, 'SIGCONT');
    const r = await a.result;
    expect(r.stderr).toContain('fenced off');
    expect(readFileSync(output, 'utf8')).toBe('from B\n');
    expect(temps()).toEqual([]); // the fenced attempt's file is removed, not left behind
    expect((await tasksIn(db)).map((t) => t.status)).toEqual(['SUCCESS']);
    expect(await pendingOutputsIn(db)).toEqual([]); // its success keeps no temporary path: the output is in place
    expect((await attemptsIn(db)).filter((x) => x.outcome === 'SUCCESS').map(({ host }) => ({ host }))).toEqual([{ host: 'host-b' }]);
  }, 60_000);
});

describe('a crash between a success\'s commit and its rename', () => {
  it('leaves the success recorded with its temporary file; the next run\'s recovery puts the output in place', async () => {
    // SIGKILL after each store write in turn until one lands between the commit and the rename.
    for (let n = 1; n <= 8; n++) {
      const p = projectWithFiles(1);
      const args = ['run', 'src', '--exec', 'echo attempt {attempt} > {out}', '--output', 'out/{rel}', '--quiet'];
      const killed = await runCli(args, { cwd: p.dir, env: { SPLITDANCE_FAILPOINT: `write:${n}` } });
      if (killed.signal !== 'SIGKILL') continue;
      const db = dbPathIn(p.dir);
      const output = join(p.dir, 'out', p.keys[0]!);
      // storedTasks: [] while the kill left no store or batch yet.
      const [task] = await storedTasks(db);
      if (task?.status !== 'SUCCESS') continue;
      const [waiting] = await pendingOutputsIn(db);
      if (waiting === undefined) continue;
      expect(readdirSafe(join(p.dir, 'out'))).toEqual([waiting.temp.split('/').at(-1)]); // committed, not yet renamed
      const again = await runCli(args, { cwd: p.dir });
      expect(again.code, again.stderr).toBe(0);
      expect(readFileSync(output, 'utf8')).toBe('attempt 1\n'); // the committed attempt's file, not a rerun's
      expect(readdirSafe(join(p.dir, 'out'))).toEqual([p.keys[0]]);
      expect((await tasksIn(db)).map(({ status, attempts }) => ({ status, attempts }))).toEqual([{ status: 'SUCCESS', attempts: 1 }]);
      expect(await pendingOutputsIn(db)).toEqual([]); // recovery cleared the temporary path
      return;
    }
    throw new Error('no store write fell between the commit of the success and the rename of its output');
  }, 60_000);
});

function readdirSafe(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
