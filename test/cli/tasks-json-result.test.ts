import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler } from '../helpers/cli.js';
import { mainIn } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { PG_URL, pgSchemas } from '../helpers/pg.js';

// Issue 41 item 18: `tasks --json` gives each task's `result` (what a module handler returned,
// or null), as `show --json` does, on both stores; a listing longer than a page streams whole.
// Called in-process: a real store, real worker processes.

const freshPg = pgSchemas('tjr');

const stores: [string, (dir: string) => string][] = [
  ['SQLite', (dir) => join(dir, 'store.db')],
  ['PostgreSQL', () => freshPg().db],
];

describe.each(stores)('tasks --json result (%s)', (name, dbOf) => {
  it.skipIf(name === 'PostgreSQL' && !PG_URL)("carries each task's result: a module's return value, null for a failure and for --exec", async () => {
    const p = projectWithFiles(3);
    const db = dbOf(p.dir);
    const mod = join(p.dir, 'h.mjs');
    writeFileSync(mod, "export default async (task) => { if (task.key === 'f001.log') throw new Error('no'); return { key: task.key, n: [1, 2] }; };\n");
    const r = await mainIn(p.dir, ['run', 'src', '--db', db, '--batch', 'm', '--handler', mod, '--retries', '0']);
    expect(r.code, r.stderr).toBe(1);
    const tasks = JSON.parse((await mainIn(p.dir, ['tasks', '--db', db, '--batch', 'm', '--json'])).stdout);
    expect(tasks.map((t: { key: string; result: unknown }) => [t.key, t.result])).toEqual([
      ['f000.log', { key: 'f000.log', n: [1, 2] }],
      ['f001.log', null],
      ['f002.log', { key: 'f002.log', n: [1, 2] }],
    ]);
    const show = JSON.parse((await mainIn(p.dir, ['show', 'f002.log', '--db', db, '--batch', 'm', '--json'])).stdout);
    expect(show.result).toEqual({ key: 'f002.log', n: [1, 2] });

    const e = await mainIn(p.dir, ['run', 'src', '--db', db, '--batch', 'e', '--exec', 'true']);
    expect(e.code, e.stderr).toBe(0);
    const execTasks = JSON.parse((await mainIn(p.dir, ['tasks', '--db', db, '--batch', 'e', '--json'])).stdout);
    expect(execTasks.map((t: { result: unknown }) => t.result)).toEqual([null, null, null]);
  });

  it.skipIf(name === 'PostgreSQL' && !PG_URL)('streams every result of a batch longer than a page (500 tasks), in order', async () => {
    const p = projectWithFiles(0);
    const db = dbOf(p.dir);
    const items = Array.from({ length: 1203 }, (_, i) => `item-${String(i).padStart(4, '0')}`);
    writeFileSync(join(p.dir, 'list.txt'), `${items.join('\n')}\n`);
    const r = await mainIn(p.dir, ['run', '--items', 'list.txt', '--db', db, '--batch', 'big', '--handler', handler('ok'), '-j', '2']);
    expect(r.code, r.stderr).toBe(0);
    const out = await mainIn(p.dir, ['tasks', '--db', db, '--batch', 'big', '--json']);
    expect(out.stdout.split('\n')).toHaveLength(2); // one line
    const tasks = JSON.parse(out.stdout) as { key: string; result: { key: string } }[];
    expect(tasks.map((t) => t.result.key)).toEqual(tasks.map((t) => t.key));
    expect(tasks.map((t) => t.key).sort()).toEqual(items);
  });
});
