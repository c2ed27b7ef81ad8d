import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler, runCli, sleep, startCli } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { statusCounts } from '../helpers/json-views.js';
import { dbPathIn, query } from '../helpers/store.js';
import { prng, seedFor } from './prng.js';

/**
 * Stages under coordinator SIGKILLs: however the runs die, no stage task ever starts before
 * the stages it needs succeeded for its item (in the store: every attempt of a dependent
 * starts at or after the finish of each need), and the pipeline completes.
 */
describe('stages under coordinator kills', () => {
  const seed = seedFor(20261203);

  it(`15 kills of a 3-stage pipeline over 40 items (seed ${seed}): no stage starts early, all succeed`, async () => {
    const rand = prng(seed);
    const p = projectWithFiles(40);
    const stage = handler('stage');
    const job = {
      source: 'src',
      retries: 1000,
      backoff: '10ms',
      stages: [
        { name: 'a', handler: stage },
        { name: 'b', handler: stage, needs: ['a'] },
        { name: 'c', handler: stage, needs: ['a', 'b'] },
      ],
    };
    writeFileSync(join(p.dir, 'splitdance.json'), JSON.stringify(job));
    const env = { STAGE_LOG: join(p.dir, 'stages.ndjson'), SLEEP_MS: '20' };
    const args = ['run', '-j', '2', '--quiet'];
    for (let k = 0; k < 15; k++) {
      const child = startCli(args, { cwd: p.dir, env });
      const r = await Promise.race([child.result, sleep(150 + Math.floor(rand() * 500)).then(() => null)]);
      if (r) {
        expect(r.code, r.stderr).toBe(0);
        break;
      }
      child.kill('SIGKILL');
      await child.result;
    }
    const final = await runCli(args, { cwd: p.dir, env });
    expect(final.code, final.stderr).toBe(0);

    const db = dbPathIn(p.dir);
    expect(await statusCounts(p.dir)).toEqual({ SUCCESS: 120 });
    // Every attempt of a dependent began after each of its needs had finished (successfully) for the item.
    const early = query(
      db,
      `SELECT t.task_key AS key, a.attempt, need.task_key AS need
       FROM attempts a JOIN tasks t ON t.id = a.task_id
       JOIN json_each(t.needs) n
       JOIN tasks need ON need.batch_id = t.batch_id AND need.item_key = t.item_key AND need.stage = n.value
       WHERE a.started_at < need.finished_at`,
    );
    expect(early, `seed ${seed}`).toEqual([]);
    // and no attempt of a dependent is older than the need's successful attempt
    const beforeSuccess = query(
      db,
      `SELECT t.task_key AS key FROM attempts a JOIN tasks t ON t.id = a.task_id
       JOIN json_each(t.needs) n
       JOIN tasks need ON need.batch_id = t.batch_id AND need.item_key = t.item_key AND need.stage = n.value
       JOIN attempts na ON na.task_id = need.id AND na.outcome = 'SUCCESS'
       WHERE a.id < na.id`,
    );
    expect(beforeSuccess, `seed ${seed}`).toEqual([]);
  }, 120_000);
});
