// Usage errors about what the store holds (no such batch, task or attempt; an unfinished batch; a report path), called in-process: exit 2, the store unchanged.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Io } from '../../src/cli/io.js';
import { cancelCommand } from '../../src/cli/commands/cancel.js';
import { logsCommand } from '../../src/cli/commands/logs.js';
import { setPausedCommand } from '../../src/cli/commands/pause.js';
import { pruneCommand } from '../../src/cli/commands/prune.js';
import { reportCommand } from '../../src/cli/commands/report.js';
import { showCommand } from '../../src/cli/commands/show.js';
import { statusCommand } from '../../src/cli/commands/status.js';
import { tasksCommand } from '../../src/cli/commands/tasks.js';
import { tempDir } from '../helpers/cli.js';
import { captureIo, mainIn, shown, usageErrorOf } from '../helpers/in-process-cli.js';
import { dbPathIn, query } from '../helpers/store.js';

/**
 * Everything a bad command must leave as it was: each file under `dir` by its bytes, and a
 * store by its rows (opening one may add SQLite's -wal and -shm files, which hold no change).
 */
function state(dir: string): string {
  const entries = (readdirSync(dir, { recursive: true }) as string[]).sort().filter((p) => !/-(wal|shm)$/.test(p));
  return JSON.stringify(
    entries.map((p) => {
      const path = join(dir, p);
      if (statSync(path).isDirectory()) return [p, 'folder'];
      if (p.endsWith('.db')) {
        const tables = query<{ name: string }>(path, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
        return [p, tables.map(({ name }) => [name, query(path, `SELECT * FROM "${name}"`)])];
      }
      return [p, createHash('sha1').update(readFileSync(path)).digest('hex')];
    }),
  );
}

async function cli(cwd: string, args: string[], code = 0): Promise<void> {
  const r = await mainIn(cwd, args);
  expect(r.code, `${shown(args)}: ${r.stderr}`).toBe(code);
}

/**
 * `dir`: batch `done` (a.txt, b.txt succeeded) and batch `open` (a.txt succeeded, c.txt never
 * attempted: the batch was paused before it). `empty`: a store whose only batch was pruned.
 */
let dir = '';
let empty = '';
let db = '';
let emptyDb = '';

beforeAll(async () => {
  dir = tempDir();
  for (const [folder, files] of [['srcDone', ['a.txt', 'b.txt']], ['srcOpen', ['a.txt']]] as const) {
    mkdirSync(join(dir, folder));
    for (const f of files) writeFileSync(join(dir, folder, f), `${f}\n`);
  }
  await cli(dir, ['run', 'srcDone', '--batch', 'done', '--exec', 'true', '--quiet']);
  await cli(dir, ['run', 'srcOpen', '--batch', 'open', '--exec', 'true', '--quiet']);
  writeFileSync(join(dir, 'srcOpen', 'c.txt'), 'c\n');
  await cli(dir, ['pause', '--batch', 'open', '--quiet']);
  await cli(dir, ['run', 'srcOpen', '--batch', 'open', '--no-wait', '--quiet'], 3);
  db = dbPathIn(dir);

  empty = tempDir();
  mkdirSync(join(empty, 'src'));
  writeFileSync(join(empty, 'src', 'a.txt'), 'a\n');
  await cli(empty, ['run', 'src', '--batch', 'gone', '--exec', 'true', '--quiet']);
  await cli(empty, ['prune', '--batch', 'gone', '--quiet']);
  emptyDb = dbPathIn(empty);
});

const noBatch = () => `no batch named "nope" in ${db}; \`splitdance batches\` lists them`;
const noBatchYet = () => `the store ${emptyDb} holds no batch yet; start one with \`splitdance run <source>\``;

describe('commands told of a batch, task or attempt the store does not hold: a UsageError, exit 2 through main(), the store unchanged', () => {
  // [which store, argv, the command function called as commander would, the message]
  const cases: ['dir' | 'empty', string[], (io: Io) => Promise<number>, () => string][] = [
    ['dir', ['status', '--batch', 'nope'], (io) => statusCommand({ batch: 'nope' }, io), noBatch],
    ['dir', ['tasks', '--batch', 'nope'], (io) => tasksCommand({ batch: 'nope' }, io), noBatch],
    ['dir', ['cancel', '--batch', 'nope'], (io) => cancelCommand({ batch: 'nope' }, io), noBatch],
    ['dir', ['pause', '--batch', 'nope'], (io) => setPausedCommand(true, { batch: 'nope' }, io), noBatch],
    ['dir', ['resume', '--batch', 'nope'], (io) => setPausedCommand(false, { batch: 'nope' }, io), noBatch],
    ['dir', ['report', '--batch', 'nope'], (io) => reportCommand({ batch: 'nope' }, io), noBatch],
    ['dir', ['show', 'nope', '--batch', 'done'], (io) => showCommand('nope', { batch: 'done' }, io), () => 'no task "nope" in batch done; `splitdance tasks --batch done` lists the keys'],
    [
      'dir',
      ['logs', 'a.txt', '--batch', 'done', '--attempt', '2'],
      (io) => logsCommand('a.txt', { batch: 'done', attempt: '2' }, io),
      () => 'task "a.txt" has no attempt 2; `splitdance show --batch done a.txt` lists its attempts',
    ],
    ['dir', ['logs', 'c.txt', '--batch', 'open'], (io) => logsCommand('c.txt', { batch: 'open' }, io), () => 'task "c.txt" has not been attempted yet'],
    [
      'dir',
      ['prune', '--batch', 'open'],
      (io) => pruneCommand({ batch: 'open' }, io),
      () => 'batch "open" is not finished (1 of 2 tasks pending, retrying or running): nothing pruned; `splitdance cancel --batch open` ends its unfinished tasks, then prune it',
    ],
    ['empty', ['status'], (io) => statusCommand({}, io), noBatchYet],
    ['empty', ['tasks'], (io) => tasksCommand({}, io), noBatchYet],
    ['empty', ['show', 'a.txt'], (io) => showCommand('a.txt', {}, io), noBatchYet],
    ['empty', ['logs', '--failed'], (io) => logsCommand(undefined, { failed: true }, io), noBatchYet],
    ['empty', ['cancel'], (io) => cancelCommand({}, io), noBatchYet],
    ['empty', ['pause'], (io) => setPausedCommand(true, {}, io), noBatchYet],
    ['empty', ['report'], (io) => reportCommand({}, io), noBatchYet],
  ];

  for (const [which, argv, call, message] of cases) {
    it(`splitdance ${shown(argv)}${which === 'empty' ? ' (a store without batches)' : ''}`, async () => {
      const cwd = which === 'dir' ? dir : empty;
      const before = state(cwd);
      const direct = captureIo(cwd);
      expect((await usageErrorOf(call(direct.io))).message).toBe(message());
      expect(direct.stdout()).toBe('');
      expect(state(cwd)).toBe(before);

      expect(await mainIn(cwd, argv)).toEqual({ code: 2, stdout: '', stderr: `splitdance: error: ${message()}\n` });
      expect(state(cwd)).toBe(before);
    });
  }
});

describe('report --html naming what it must not write: a UsageError before a byte is written', () => {
  // [--html, the message]
  const cases: [string, () => string][] = [
    ['srcDone', () => `cannot write the report: ${dir}/srcDone is a folder; give --html a file path such as ${dir}/srcDone/report.html`],
    ['.splitdance/splitdance.db', () => `cannot write the report ${db}: it is the store's ${db}; give --html a path outside the store`],
    [
      'missing/report.html',
      () => `cannot write the report ${dir}/missing/report.html: the folder ${dir}/missing does not exist; create it (mkdir -p) or give --html a path in an existing folder`,
    ],
  ];
  for (const [html, message] of cases) {
    it(`splitdance report --batch done --html ${html}`, async () => {
      const before = state(dir);
      const direct = captureIo(dir);
      expect((await usageErrorOf(reportCommand({ batch: 'done', html }, direct.io))).message).toBe(message());
      expect(state(dir)).toBe(before);

      expect(await mainIn(dir, ['report', '--batch', 'done', '--html', html])).toEqual({ code: 2, stdout: '', stderr: `splitdance: error: ${message()}\n` });
      expect(state(dir)).toBe(before);
    });
  }
});

describe('retry-failed and run, through main(): exit 2, the store unchanged', () => {
  // [argv, the message]
  const cases: [string[], () => string][] = [
    [['retry-failed', '--batch', 'nope'], noBatch],
    [['retry-failed', '--run', '--batch', 'nope'], noBatch],
    [
      ['run', 'srcDone', '--batch', 'done', '--exec', 'false'],
      () =>
        'batch done already finished (2 succeeded); this run changes its handler (--exec "true" → --exec "false") but has no task to run, ' +
        'so nothing was written; a new batch runs the source with it: --batch done-2',
    ],
  ];
  for (const [argv, message] of cases) {
    it(`splitdance ${shown(argv)}`, async () => {
      const before = state(dir);
      expect(await mainIn(dir, argv)).toEqual({ code: 2, stdout: '', stderr: `splitdance: error: ${message()}\n` });
      expect(state(dir)).toBe(before);
    });
  }
});
