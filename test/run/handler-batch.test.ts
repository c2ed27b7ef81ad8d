import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mainIn } from '../helpers/in-process-cli.js';
import { attemptsIn, tasksIn } from '../helpers/read-store.js';

// A handler module that exports `batch(tasks, ctx)` gets many tasks per call (SPEC §10), and
// every task keeps its own row, attempt, result and error. A call that throws fails the whole
// group, which is split (halves, then single tasks) until the tasks that fail on their own are found.

/** A project with `n` items and a handler module `body`; each call appends its tasks' items to calls.log. */
function project(n: number, body: string): { dir: string; db: string; calls: () => string[][] } {
  const dir = mkdtempSync(join(tmpdir(), 'sd-batch-'));
  writeFileSync(join(dir, 'items.txt'), Array.from({ length: n }, (_, i) => `${i + 1}\n`).join(''));
  writeFileSync(
    join(dir, 'h.mjs'),
    `import { appendFileSync } from 'node:fs';\nimport { PermanentError } from 'splitdance';\n` +
      `const log = (tasks) => appendFileSync(${JSON.stringify(join(dir, 'calls.log'))}, tasks.map((t) => t.item).join(',') + '\\n');\n` +
      body,
  );
  const calls = () => readFileSync(join(dir, 'calls.log'), 'utf8').trim().split('\n').map((l) => l.split(','));
  return { dir, db: join(dir, '.splitdance', 'splitdance.db'), calls };
}

const run = (dir: string, ...extra: string[]) => mainIn(dir, ['run', '--items', 'items.txt', '--handler', './h.mjs', '-j', '2', ...extra]);

describe("a handler's batch export", () => {
  it('runs many tasks per call; a throw caused by one task ends that task FAILED alone and every other SUCCESS with its own result', async () => {
    const p = project(
      200,
      `export async function batch(tasks) {
        log(tasks);
        if (tasks.some((t) => t.item === '77')) throw new Error('77 spoils every call it is in');
        return tasks.map((t) => ({ twice: Number(t.item) * 2 }));
      }\n`,
    );
    const r = await run(p.dir, '--retries', '2', '--backoff', '50ms', '--backoff-factor', '1');
    expect(r.code, r.stderr).toBe(1);
    const tasks = await tasksIn(p.db);
    expect(tasks.filter((t) => t.status === 'SUCCESS')).toHaveLength(199);
    const bad = tasks.find((t) => t.key === '77')!;
    expect(bad.status).toBe('FAILED');
    expect(bad.lastError).toContain('77 spoils every call');
    for (const t of tasks) if (t.key !== '77') expect(JSON.parse(t.result!)).toEqual({ twice: Number(t.key) * 2 });
    const calls = p.calls();
    // Grouped: far fewer calls than tasks, groups of at most 64 (the default bound), dealt
    // round the worker's places, so 200 tasks fill every place's group (50 each).
    expect(Math.max(...calls.map((c) => c.length))).toBeLessThanOrEqual(64);
    expect(calls.filter((c) => c.length >= 32).length).toBeGreaterThanOrEqual(3);
    // The failing task ran alone in the end, once per attempt (3 attempts), and only it was charged.
    expect(calls.filter((c) => c.length === 1 && c[0] === '77')).toHaveLength(3);
    const attempts = await attemptsIn(p.db);
    for (const t of tasks) expect(attempts.filter((a) => a.key === t.key), t.key).toHaveLength(t.key === '77' ? 3 : 1);
    // Every other task ran in exactly one call that succeeded: no task ran twice after its success.
    const successes = calls.filter((c) => !c.includes('77')).flat();
    expect(successes.sort()).toEqual(tasks.filter((t) => t.key !== '77').map((t) => t.key).sort());
  });

  it('an Error returned for one task fails only that task, without splitting the call', async () => {
    const p = project(
      10,
      `export async function batch(tasks) {
        log(tasks);
        return tasks.map((t) => (t.item === '3' ? new PermanentError('three is refused') : t.item));
      }\n`,
    );
    const r = await run(p.dir, '--retries', '3');
    expect(r.code, r.stderr).toBe(1);
    const tasks = await tasksIn(p.db);
    expect(tasks.find((t) => t.key === '3')).toMatchObject({ status: 'FAILED', attempts: 1 });
    expect(tasks.find((t) => t.key === '3')!.lastError).toContain('three is refused');
    expect(tasks.filter((t) => t.status === 'SUCCESS').map((t) => JSON.parse(t.result!))).toEqual(['1', '2', '4', '5', '6', '7', '8', '9', '10']);
    // Nothing was split: no call ran a single task.
    expect(p.calls().every((c) => c.length > 1)).toBe(true);
  });

  it('maxItems exported by the module bounds each call', async () => {
    const p = project(23, `export const maxItems = 5;\nexport async function batch(tasks) { log(tasks); return tasks.map(() => null); }\n`);
    const r = await run(p.dir);
    expect(r.code, r.stderr).toBe(0);
    const calls = p.calls();
    expect(Math.max(...calls.map((c) => c.length))).toBe(5);
    expect(calls.flat().sort()).toEqual(Array.from({ length: 23 }, (_, i) => String(i + 1)).sort());
  });

  it('a call that returns the wrong number of results fails the group, then each task on its own, saying what batch must return', async () => {
    const p = project(4, `export async function batch(tasks) { log(tasks); return []; }\n`);
    const r = await run(p.dir, '--retries', '0');
    expect(r.code).toBe(1);
    for (const t of await tasksIn(p.db)) {
      expect(t.status).toBe('FAILED');
      expect(t.lastError).toContain('must return an array of one result (or Error) per task, 1 here; it returned an array of 0');
    }
  });

  it('a module with both exports gives a single task to its default export', async () => {
    const p = project(
      6,
      `export default async (task) => { log([task]); return 'one ' + task.item; };\n` +
        `export async function batch(tasks) { log(tasks); if (tasks.length > 1 && tasks.some((t) => t.item === '2')) throw new Error('no'); return tasks.map((t) => 'many ' + t.item); }\n`,
    );
    const r = await run(p.dir, '-j', '1');
    expect(r.code, r.stderr).toBe(0);
    const results = Object.fromEntries((await tasksIn(p.db)).map((t) => [t.key, JSON.parse(t.result!)]));
    expect(results['2']).toBe('one 2');
    expect(Object.values(results).filter((v) => String(v).startsWith('many '))).not.toHaveLength(0);
  });

  it('a task with a declared output gets a call of its own (its task.out is one item\'s), and its output is put in place', async () => {
    const p = project(
      5,
      `import { writeFileSync } from 'node:fs';\nexport async function batch(tasks) { log(tasks); for (const t of tasks) writeFileSync(t.out, 'made ' + t.item); return tasks.map(() => null); }\n`,
    );
    const r = await run(p.dir, '--output', 'out/{item}.txt');
    expect(r.code, r.stderr).toBe(0);
    expect(p.calls().every((c) => c.length === 1)).toBe(true);
    for (let i = 1; i <= 5; i++) expect(readFileSync(join(p.dir, 'out', `${i}.txt`), 'utf8')).toBe(`made ${i}`);
  });
});
