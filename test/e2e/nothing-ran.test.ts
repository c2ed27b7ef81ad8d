import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, tempDir } from '../helpers/cli.js';

/** SPEC §6: `run` never ends as a silent no-op; a run that finds every task finished says so, and how to run them again. */

const lines = (text: string) => text.split('\n').filter((l) => l !== '');

describe('a run with nothing left to run', () => {
  it('a stdin one-liner run a second time prints nothing on stdout, exit 0, and says on stderr that all were done and how to run them again', async () => {
    const dir = tempDir();
    const args = ['run', '-', '--exec', 'echo {}', '--print'];
    const first = await runCli(args, { cwd: dir, input: 'a\nb\nc\n' });
    expect(first.code, first.stderr).toBe(0);
    expect(lines(first.stdout).sort()).toEqual(['a', 'b', 'c']);
    expect(first.stderr).not.toMatch(/nothing ran/);

    const again = await runCli(args, { cwd: dir, input: 'a\nb\nc\n' });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe('');
    const batch = /batch (stdin-[0-9a-f]{8}):/.exec(again.stderr)![1]!;
    expect(again.stderr).toContain(`nothing ran: all 3 tasks of batch ${batch} were already done\nto run them again, add --batch ${batch}-2 (a new batch)\n`);
    for (const l of lines(again.stderr).slice(-2)) expect(l.length, l).toBeLessThanOrEqual(80);

    // The way given runs them again.
    const fresh = await runCli([...args, '--batch', `${batch}-2`], { cwd: dir, input: 'a\nb\nc\n' });
    expect(fresh.code, fresh.stderr).toBe(0);
    expect(lines(fresh.stdout).sort()).toEqual(['a', 'b', 'c']);

    // cron: --quiet prints nothing at all on full success, this case included.
    const quiet = await runCli([...args, '--quiet'], { cwd: dir, input: 'a\nb\nc\n' });
    expect(quiet.code).toBe(0);
    expect(quiet.stdout + quiet.stderr).toBe('');
  });

  it('a list whose batch finished with failures: nothing ran, exit 1, retry-failed --run named; with outputs a new batch needs --force', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'list.txt'), 'ok\nbad\n');
    const args = ['run', '--items', 'list.txt', '--retries', '0', '--exec', 'test {} = ok'];
    expect((await runCli(args, { cwd: dir })).code).toBe(1);
    const again = await runCli(args, { cwd: dir });
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/nothing ran: all 2 tasks of batch list\.txt-[0-9a-f]{8} had already finished\n/);
    expect(again.stderr).toMatch(/retry them: splitdance retry-failed --run --batch list\.txt-[0-9a-f]{8}/);

    const out = ['run', '--items', 'list.txt', '--batch', 'o', '--exec', 'echo {} > {out}', '--output', 'out/{item}.txt'];
    expect((await runCli(out, { cwd: dir })).code).toBe(0);
    const done = await runCli(out, { cwd: dir });
    expect(done.code).toBe(0);
    expect(done.stderr).toContain('nothing ran: all 2 tasks of batch o were already done\nto run them again, add --batch o-2 --force (a new batch)\n');
  });
});
