import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn, query } from '../helpers/store.js';

/** `prune --dry-run` looks first; `prune --batch NAME` picks one finished batch, whatever its age. */
describe('prune: look first, pick one', () => {
  it('--dry-run lists the batches, tasks, attempts and log bytes that would go, and deletes nothing', async () => {
    const p = projectWithFiles(2);
    const opts = { cwd: p.dir };
    for (const b of ['a', 'b', 'c']) expect((await runCli(['run', 'src', '--batch', b, '--exec', 'echo hello {key}'], opts)).code).toBe(0);
    expect((await runCli(['run', 'src', '--batch', 'live', '--exec', 'false', '--retry-quiet', '--backoff', '1h', '--no-wait'], opts)).code).toBe(3);
    const db = dbPathIn(p.dir);
    const logs = join(p.dir, '.splitdance', 'logs');
    const snapshot = () => ({ rows: query(db, 'SELECT (SELECT count(*) FROM batches) AS b, (SELECT count(*) FROM tasks) AS t, (SELECT count(*) FROM attempts) AS a'), files: readdirSync(logs, { recursive: true }).sort() });
    const before = snapshot();

    const json = await runCli(['prune', '--older-than', '0s', '--dry-run', '--json'], opts);
    expect(json.code, json.stderr).toBe(0);
    expect(json.stdout.trim().split('\n')).toHaveLength(1);
    const plan = JSON.parse(json.stdout);
    expect({ ...plan, batches: [...plan.batches].sort() }).toMatchObject({ dryRun: true, batches: ['a', 'b', 'c'], tasks: 6, attempts: 6 });
    // Each attempt printed "hello <key>\n" (15 bytes) into its own log file.
    expect(plan.logBytes).toBe(6 * 'hello f000.log\n'.length);

    const human = await runCli(['prune', '--older-than', '0s', '--dry-run'], opts);
    expect(human.code).toBe(0);
    expect(human.stderr).toMatch(/^would prune 3 batches \(.*\): 6 tasks, 6 attempts, 90 B of logs \(dry run: nothing deleted\)$/m);
    expect(snapshot()).toEqual(before);
  });

  it('--batch NAME prunes that finished batch whatever its age, and refuses an unfinished one with exit 2', async () => {
    const p = projectWithFiles(2);
    const opts = { cwd: p.dir };
    for (const b of ['a', 'b']) expect((await runCli(['run', 'src', '--batch', b, '--exec', 'echo hello {key}'], opts)).code).toBe(0);
    expect((await runCli(['run', 'src', '--batch', 'live', '--exec', 'false', '--retry-quiet', '--backoff', '1h', '--no-wait'], opts)).code).toBe(3);
    const db = dbPathIn(p.dir);
    const names = () => query<{ name: string }>(db, 'SELECT name FROM batches ORDER BY id').map((r) => r.name);

    // Finished seconds ago: the default --older-than 30d keeps it, --batch takes it.
    expect((await runCli(['prune', '--json'], opts)).stdout).toContain('"batches":[]');
    const dry = await runCli(['prune', '--batch', 'b', '--dry-run', '--json'], opts);
    expect(JSON.parse(dry.stdout)).toMatchObject({ dryRun: true, batches: ['b'], tasks: 2, attempts: 2 });
    expect(names()).toEqual(['a', 'b', 'live']);
    const r = await runCli(['prune', '--batch', 'b', '--json'], opts);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ dryRun: false, batches: ['b'], tasks: 2, attempts: 2, logBytes: 30 });
    expect(names()).toEqual(['a', 'live']);

    const unfinished = await runCli(['prune', '--batch', 'live'], opts);
    expect(unfinished.code).toBe(2);
    expect(unfinished.stderr).toMatch(/batch "live" is not finished \(2 of 2 tasks pending, retrying or running\): nothing pruned; `splitdance cancel --batch live`/);
    for (const [args, message] of [
      [['prune', '--batch', 'nope'], /no batch named "nope"/],
      [['prune', '--batch', 'a', '--older-than', '1d'], /give --batch or --older-than, not both/],
    ] as const) {
      const bad = await runCli([...args], opts);
      expect(bad.code, args.join(' ')).toBe(2);
      expect(bad.stderr).toMatch(message);
    }
    expect(names()).toEqual(['a', 'live']);
    expect(existsSync(db)).toBe(true);
  });
});
