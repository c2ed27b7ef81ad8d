import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mainIn } from '../helpers/in-process-cli.js';
import { PG_URL, pgSchemas } from '../helpers/pg.js';
import { projectWithFiles } from '../helpers/project.js';

// SPEC §6: attempt numbers (`#N` in show, `logs --attempt N`, `{attempt}`, `task.attempt`) count
// every attempt a task ever had and never restart; the retry budget retry-failed resets is a
// separate count.

const freshPg = pgSchemas('attemptno');

/** One task that fails (printing which attempt it was) until a file `fixed` exists. */
async function failTwiceThenFix(db: string): Promise<{ dir: string; run: (args: string[]) => ReturnType<typeof mainIn> }> {
  const p = projectWithFiles(1);
  const run = (args: string[]) => mainIn(p.dir, [...args, '--db', db]);
  const exec = 'echo "attempt {attempt} env $SPLITDANCE_ATTEMPT"; echo {attempt} >> seen; test -e fixed';
  const first = await run(['run', 'src', '--exec', exec, '--retry-quiet', '--retries', '1', '--backoff', '1ms', '--jitter', '0']);
  expect(first.code, first.stderr).toBe(1);
  writeFileSync(join(p.dir, 'fixed'), '');
  return { dir: p.dir, run };
}

async function check(db: string): Promise<void> {
  const { dir, run } = await failTwiceThenFix(db);
  const again = await run(['retry-failed', '--run']);
  expect(again.code, again.stderr).toBe(0);
  // The command saw the third attempt as 3, in the placeholder and in the environment.
  expect(readFileSync(join(dir, 'seen'), 'utf8')).toBe('1\n2\n3\n');
  const shown = JSON.parse((await run(['show', 'f000.log', '--json'])).stdout);
  expect(shown.attempts.map((a: { attempt: number; outcome: string }) => `${a.attempt} ${a.outcome}`)).toEqual(['1 FAILED', '2 FAILED', '3 SUCCESS']);
  expect(shown.status).toBe('SUCCESS');
  // The first failure's log stays reachable under its own number.
  expect((await run(['logs', 'f000.log', '--attempt', '1'])).stdout).toBe('attempt 1 env 1\n');
  expect((await run(['logs', 'f000.log', '--attempt', '3'])).stdout).toBe('attempt 3 env 3\n');
  // The human timeline numbers them the same way.
  const human = (await run(['show', 'f000.log'])).stdout;
  expect(human).toMatch(/#1 [^\n]*FAILED[\s\S]*#2 [^\n]*FAILED[\s\S]*#3 [^\n]*SUCCESS/);
  // The budget is its own count: the reset task used 1 attempt of its fresh budget of 2.
  const [task] = JSON.parse((await run(['tasks', '--json'])).stdout);
  expect(task.attempts).toBe(1);
}

describe('attempt numbers after retry-failed', () => {
  it('keep counting on SQLite: show lists #1 FAILED, #2 FAILED, #3 SUCCESS and logs --attempt 1 is the first failure', async () => {
    const p = projectWithFiles(0);
    await check(join(p.dir, 'store.db'));
  });

  it.skipIf(!PG_URL)('keep counting on PostgreSQL', async () => {
    await check(freshPg().db);
  });
});
