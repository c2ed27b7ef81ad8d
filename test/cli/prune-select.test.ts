import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn } from '../helpers/store.js';
import { allAttempts, storedBatches } from '../helpers/json-views.js';
import { mainIn } from '../helpers/in-process-cli.js';

/** `prune --dry-run` looks first; `prune --batch NAME` picks one finished batch, whatever its age. */
describe('prune: look first, pick one', () => {
  it('--dry-run lists the batches, tasks, attempts and log bytes that would go, and deletes nothing', async () => {
    const p = projectWithFiles(2);
    const opts = { cwd: p.dir };
    for (const b of ['a', 'b', 'c']) expect((await mainIn(opts.cwd, ['run', 'src', '--batch', b, '--exec', 'echo hello {key}'])).code).toBe(0);
    expect((await mainIn(opts.cwd, ['run', 'src', '--batch', 'live', '--exec', 'false', '--retry-quiet', '--backoff', '1h', '--no-wait'])).code).toBe(3);
    const logs = join(p.dir, '.splitdance', 'logs');
    // Every batch with its task counts, every attempt, and every log file: what a prune would delete.
    const snapshot = async () => ({
      batches: (await mainIn(p.dir, ['batches', '--json'])).stdout,
      attempts: (await Promise.all(['a', 'b', 'c', 'live'].map((batch) => allAttempts(p.dir, ['--batch', batch])))).flat().length,
      files: readdirSync(logs, { recursive: true }).sort(),
    });
    const before = await snapshot();

    const json = await mainIn(opts.cwd, ['prune', '--older-than', '0s', '--dry-run', '--json']);
    expect(json.code, json.stderr).toBe(0);
    expect(json.stdout.trim().split('\n')).toHaveLength(1);
    const plan = JSON.parse(json.stdout);
    expect({ ...plan, batches: [...plan.batches].sort() }).toMatchObject({ dryRun: true, batches: ['a', 'b', 'c'], tasks: 6, attempts: 6 });
    // Each attempt printed "hello <key>\n" (15 bytes) into its own log file.
    expect(plan.logBytes).toBe(6 * 'hello f000.log\n'.length);

    const human = await mainIn(opts.cwd, ['prune', '--older-than', '0s', '--dry-run']);
    expect(human.code).toBe(0);
    expect(human.stderr).toMatch(/^would prune 3 batches \(.*\): 6 tasks, 6 attempts, 90 B of logs \(dry run: nothing deleted\)$/m);
    expect(await snapshot()).toEqual(before);
  });

  it('--batch NAME prunes that finished batch whatever its age, and refuses an unfinished one with exit 2', async () => {
    const p = projectWithFiles(2);
    const opts = { cwd: p.dir };
    for (const b of ['a', 'b']) expect((await mainIn(opts.cwd, ['run', 'src', '--batch', b, '--exec', 'echo hello {key}'])).code).toBe(0);
    expect((await mainIn(opts.cwd, ['run', 'src', '--batch', 'live', '--exec', 'false', '--retry-quiet', '--backoff', '1h', '--no-wait'])).code).toBe(3);
    const db = dbPathIn(p.dir);
    const names = async () => (await storedBatches(db)).map((r) => r.name);

    // Finished seconds ago: the default --older-than 30d keeps it, --batch takes it.
    expect((await mainIn(opts.cwd, ['prune', '--json'])).stdout).toContain('"batches":[]');
    const dry = await mainIn(opts.cwd, ['prune', '--batch', 'b', '--dry-run', '--json']);
    expect(JSON.parse(dry.stdout)).toMatchObject({ dryRun: true, batches: ['b'], tasks: 2, attempts: 2 });
    expect(await names()).toEqual(['a', 'b', 'live']);
    const r = await mainIn(opts.cwd, ['prune', '--batch', 'b', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ dryRun: false, batches: ['b'], tasks: 2, attempts: 2, logBytes: 30 });
    expect(await names()).toEqual(['a', 'live']);

    const unfinished = await mainIn(opts.cwd, ['prune', '--batch', 'live']);
    expect(unfinished.code).toBe(2);
    expect(unfinished.stderr).toMatch(/batch "live" is not finished \(2 of 2 tasks pending, retrying or running\): nothing pruned; `splitdance cancel --batch live`/);
    for (const [args, message] of [
      [['prune', '--batch', 'nope'], /no batch named "nope"/],
      [['prune', '--batch', 'a', '--older-than', '1d'], /give --batch or --older-than, not both/],
    ] as const) {
      const bad = await mainIn(opts.cwd, [...args]);
      expect(bad.code, args.join(' ')).toBe(2);
      expect(bad.stderr).toMatch(message);
    }
    expect(await names()).toEqual(['a', 'live']);
    expect(existsSync(db)).toBe(true);
  });
});
