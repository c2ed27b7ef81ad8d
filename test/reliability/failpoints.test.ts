import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler, runCli, tempDir } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { storedBatches } from '../helpers/json-views.js';
import { countsIn, tasksIn } from '../helpers/read-store.js';
import { dbPathIn } from '../helpers/store.js';
import { checkInvariants } from './invariants.js';

describe('R2: crash at every store write of a 10-task run', () => {
  it('resumes to completion with zero violations for every N', async () => {
    const failures: string[] = [];
    let n = 1;
    for (; n < 200; n++) {
      const p = projectWithFiles(10);
      const canaries = join(p.dir, 'canaries');
      mkdirSync(canaries);
      // 5 ms tasks: longer than a tick may wait for others to share its commit (2 ms), so each
      // result has a commit of its own and the walk crosses every step of the run.
      const env = { SIDE_EFFECT_LOG: p.log, CANARY_DIR: canaries, SLEEP_MS: '5' };
      const args = ['run', 'src', '--handler', handler('record'), '-j', '1', '--retries', '2', '--backoff', '10ms', '--quiet'];
      const crashed = await runCli(args, { cwd: p.dir, env: { ...env, SPLITDANCE_FAILPOINT: `write:${n}` } });
      if (crashed.signal !== 'SIGKILL') {
        // N is past the last write: the run finished untouched.
        expect(crashed.code, crashed.stderr).toBe(0);
        break;
      }
      const resumed = await runCli(args, { cwd: p.dir, env });
      if (resumed.code !== 0) failures.push(`write ${n}: resume exited ${resumed.code}: ${resumed.stderr}`);
      const v = checkInvariants({ dbPath: dbPathIn(p.dir), keys: p.keys, retries: 2, logPath: p.log, kills: 1, concurrency: 1 });
      failures.push(...v.map((x) => `write ${n}: ${x}`));
    }
    expect(failures).toEqual([]);
    // A 10-task run makes at least one write per task (a result shares its commit with the next
    // claim): the walk really covered them.
    expect(n).toBeGreaterThan(10);
  }, 240_000);
});

describe('R13: disk full during enqueue', () => {
  it('leaves no partial batch; exit 4 naming the full disk; a rerun with space completes', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'big.txt'), Array.from({ length: 20_000 }, (_, i) => `line ${i}\n`).join(''));
    const args = ['run', 'big.txt', '--exec', 'true', '--lines', '1', '-j', '1', '--no-wait'];
    // A first small batch makes the store exist with room for little more.
    writeFileSync(join(dir, 'small.txt'), 'a\nb\n');
    expect((await runCli(['run', 'small.txt', '--exec', 'true', '--lines', '1'], { cwd: dir })).code).toBe(0);
    const full = await runCli(args, { cwd: dir, env: { SPLITDANCE_FAILPOINT: 'pages:40' } });
    expect(full.code).toBe(4);
    expect(full.stderr).toMatch(/disk holding .*splitdance\.db is full/);
    // One batch (the small one), so its count is every task the store holds.
    expect((await storedBatches(dbPathIn(dir))).length).toBe(1);
    expect((await countsIn(dbPathIn(dir))).total).toBe(2);
    const again = await runCli(['run', 'big.txt', '--exec', 'true', '--lines', '1', '--no-wait', '--max-runtime', '1s'], { cwd: dir });
    expect([0, 3]).toContain(again.code);
    expect((await tasksIn(dbPathIn(dir))).filter((t) => t.key.startsWith('big.txt:')).length).toBe(20_000);
  });
});
