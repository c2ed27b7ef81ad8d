import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, renameSync, statSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { batchFolderName, logRange } from '../../src/store/log-layout.js';
import { mainInProcessEnv } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { PG_URL, pgSchemas } from '../helpers/pg.js';
import { readStore } from '../helpers/read-store.js';
import { dbPathIn, query } from '../helpers/store.js';

/**
 * SPEC §4 and §9: a log file belongs to exactly one store and one batch, is created new
 * (never appended to, never through a symlink) in 0700 folders, and `prune` deletes only
 * what is provably its own, whatever a batch is called.
 */

const mode = (path: string) => statSync(path).mode & 0o777;

/** Log segments (store/log-layout.ts): once an attempt ends, its log is moved into one of its worker's. */
const SEGMENT = /^seg-[0-9a-z]+-[1-9][0-9]*\.log$/;

/** The files in a batch's log folder: segments only (every attempt ended), at least one. */
function expectSegmentsOnly(folder: string): void {
  const names = readdirSync(folder);
  expect(names.length).toBeGreaterThan(0);
  for (const name of names) expect(name).toMatch(SEGMENT);
}

/** The bytes a recorded log names: a segment's range, or a whole file. */
function logText(recorded: string): string {
  const { path, offset, length } = logRange(recorded);
  const bytes = readFileSync(path);
  return bytes.subarray(offset, length === null ? undefined : offset + length).toString('utf8');
}

async function cli(args: string[], cwd: string, env: Record<string, string> = {}, expected = 0): Promise<{ code: number; stdout: string; stderr: string }> {
  const r = await mainInProcessEnv(cwd, args, env);
  expect(r.code, `${args.join(' ')}\n${r.stderr}`).toBe(expected);
  return r;
}

/** The store's identity, which names its log folder (the layout itself: no command shows it). */
const identityOf = (db: string) => query<{ id: string }>(db, 'SELECT id FROM store_identity')[0]!.id;

/** Where the layout puts a batch's logs for a SQLite store at `db`. */
const folderOf = (db: string, batch: string) => join(dirname(db), 'logs', identityOf(db), batchFolderName(batch));

/** Every attempt with its recorded log path, oldest first. */
const attemptLogs = (db: string) =>
  readStore(db, async (store) => {
    const found: { id: number; key: string; log_path: string | null }[] = [];
    for (const b of await store.listBatches())
      for (const t of await store.listTasks({ batchId: b.id })) for (const a of await store.attemptsOf(t.id)) found.push({ id: a.id, key: t.key, log_path: a.logPath });
    return found.sort((a, b) => a.id - b.id);
  });

/** Leaves the batch unfinished (a retry due in an hour), so `prune` must keep it and its logs. */
const unfinished = (batch: string, words: string) => ['run', 'src', '--batch', batch, '--exec', `echo ${words} {/}; exit 1`, '--retry-quiet', '--retries', '1', '--backoff', '1h', '--no-wait'];

async function logsOf(cwd: string, key: string, args: string[]): Promise<string> {
  return (await cli(['logs', key, ...args], cwd)).stdout;
}

describe('prune with hostile batch names', () => {
  it('--batch .. then prune keeps the store folder and the other batches\' logs', async () => {
    const p = projectWithFiles(2);
    await cli(unfinished('keep', 'kept'), p.dir, {}, 3);
    await cli(['run', 'src', '--batch', '..', '--exec', 'echo dotdot {/}'], p.dir);
    const db = dbPathIn(p.dir);
    expectSegmentsOnly(folderOf(db, '..'));
    const r = await cli(['prune', '--older-than', '0s'], p.dir);
    expect(r.stderr).toContain('pruned 1 batch (..)');
    expect(existsSync(db)).toBe(true);
    expect(existsSync(folderOf(db, '..'))).toBe(false);
    expect(await logsOf(p.dir, 'f000.log', ['--batch', 'keep'])).toBe('kept f000.log\n');
    expect(readdirSync(p.src).sort()).toEqual(['f000.log', 'f001.log']);
  });

  it('--db x.db --batch .. then prune keeps the working directory', async () => {
    const p = projectWithFiles(2);
    const db = join(p.dir, 'x.db');
    await cli([...unfinished('keep', 'kept'), '--db', 'x.db'], p.dir, {}, 3);
    await cli(['run', 'src', '--db', 'x.db', '--batch', '..', '--exec', 'echo dotdot {/}'], p.dir);
    await cli(['prune', '--db', 'x.db', '--older-than', '0s'], p.dir);
    expect(existsSync(db)).toBe(true);
    expect(readdirSync(p.src).sort()).toEqual(['f000.log', 'f001.log']);
    expect(await logsOf(p.dir, 'f001.log', ['--db', 'x.db', '--batch', 'keep'])).toBe('kept f001.log\n');
  });

  it('--batch . then prune deletes only that batch\'s logs', async () => {
    const p = projectWithFiles(2);
    await cli(unfinished('keep', 'kept'), p.dir, {}, 3);
    await cli(['run', 'src', '--batch', '.', '--exec', 'echo dot {/}'], p.dir);
    const db = dbPathIn(p.dir);
    expect(folderOf(db, '.')).not.toBe(folderOf(db, 'keep'));
    await cli(['prune', '--older-than', '0s'], p.dir);
    expect(existsSync(folderOf(db, '.'))).toBe(false);
    expectSegmentsOnly(folderOf(db, 'keep'));
    expect(await logsOf(p.dir, 'f000.log', ['--batch', 'keep'])).toBe('kept f000.log\n');
  });

  it('a job file\'s batch ".." then prune keeps the store folder', async () => {
    const p = projectWithFiles(2);
    await cli(unfinished('keep', 'kept'), p.dir, {}, 3);
    writeFileSync(join(p.dir, 'splitdance.json'), JSON.stringify({ source: 'src', exec: 'echo job {/}', batch: '..' }));
    await cli(['run'], p.dir);
    await cli(['prune', '--older-than', '0s'], p.dir);
    expect(existsSync(dbPathIn(p.dir))).toBe(true);
    expect(existsSync(join(p.dir, 'splitdance.json'))).toBe(true);
    expect(await logsOf(p.dir, 'f000.log', ['--batch', 'keep'])).toBe('kept f000.log\n');
  });

  it('a prune leaves a file in the batch folder that is not an attempt log it recorded', async () => {
    const p = projectWithFiles(1);
    await cli(['run', 'src', '--batch', 'b', '--exec', 'echo out {/}'], p.dir);
    const folder = folderOf(dbPathIn(p.dir), 'b');
    writeFileSync(join(folder, 'notes.txt'), 'mine\n');
    await cli(['prune', '--older-than', '0s'], p.dir);
    expect(readdirSync(folder)).toEqual(['notes.txt']);
  });
});

describe('logs of one store and one batch', () => {
  it('two SQLite stores side by side with the same batch name keep their own logs, and pruning one leaves the other\'s', async () => {
    const p = projectWithFiles(2);
    await cli(['run', 'src', '--db', 'a.db', '--batch', 'same', '--exec', 'echo from-a {/}'], p.dir);
    await cli(['run', 'src', '--db', 'b.db', '--batch', 'same', '--exec', 'echo from-b {/}'], p.dir);
    expect(await logsOf(p.dir, 'f000.log', ['--db', 'a.db', '--batch', 'same'])).toBe('from-a f000.log\n');
    expect(await logsOf(p.dir, 'f000.log', ['--db', 'b.db', '--batch', 'same'])).toBe('from-b f000.log\n');
    await cli(['prune', '--db', 'a.db', '--older-than', '0s'], p.dir);
    expect(await logsOf(p.dir, 'f000.log', ['--db', 'b.db', '--batch', 'same'])).toBe('from-b f000.log\n');
    expect(await logsOf(p.dir, 'f001.log', ['--db', 'b.db', '--batch', 'same'])).toBe('from-b f001.log\n');
  });

  it('batches a/b and a_b get distinct folders; pruning one leaves the other\'s logs', async () => {
    const p = projectWithFiles(1);
    await cli(unfinished('a_b', 'underscore'), p.dir, {}, 3);
    await cli(['run', 'src', '--batch', 'a/b', '--exec', 'echo slash {/}'], p.dir);
    const db = dbPathIn(p.dir);
    expect(folderOf(db, 'a/b')).not.toBe(folderOf(db, 'a_b'));
    expect(await logsOf(p.dir, 'f000.log', ['--batch', 'a/b'])).toBe('slash f000.log\n');
    await cli(['prune', '--older-than', '0s'], p.dir);
    expect(await logsOf(p.dir, 'f000.log', ['--batch', 'a_b'])).toBe('underscore f000.log\n');
  });

  it('a store moved aside and created again never appends to the old store\'s log files', async () => {
    const p = projectWithFiles(1);
    await cli(['run', 'src', '--batch', 'nightly', '--exec', 'echo first {/}'], p.dir);
    const db = dbPathIn(p.dir);
    const old = join(p.dir, 'old.db');
    renameSync(db, old);
    for (const side of ['-wal', '-shm']) if (existsSync(db + side)) renameSync(db + side, old + side);
    await cli(['run', 'src', '--batch', 'nightly', '--exec', 'echo second {/}'], p.dir);
    const oldLog = (await attemptLogs(old))[0]!.log_path!;
    expect(logText(oldLog)).toBe('first f000.log\n');
    expect(await logsOf(p.dir, 'f000.log', ['--batch', 'nightly'])).toBe('second f000.log\n');
    expect(await logsOf(p.dir, 'f000.log', ['--db', 'old.db', '--batch', 'nightly'])).toBe('first f000.log\n');
  });

  it('a store moved with its folder (logs included) still shows its logs', async () => {
    const p = projectWithFiles(1);
    await cli(['run', 'src', '--db', 'a/x.db', '--batch', 'b', '--exec', 'echo out {/}'], p.dir);
    renameSync(join(p.dir, 'a'), join(p.dir, 'moved'));
    expect(await logsOf(p.dir, 'f000.log', ['--db', 'moved/x.db', '--batch', 'b'])).toBe('out f000.log\n');
  });

  it('logs never shows a file at a recorded path outside the store\'s log folder (another store\'s, as before identities)', async () => {
    const p = projectWithFiles(1);
    await cli(['run', 'src', '--batch', 'b', '--exec', 'echo mine {/}'], p.dir);
    const db = dbPathIn(p.dir);
    const shared = join(p.dir, '.splitdance', 'logs', 'b', '1.log'); // the layout before identities
    mkdirSync(dirname(shared), { recursive: true });
    writeFileSync(shared, 'another store\'s output\n');
    for (const name of readdirSync(folderOf(db, 'b'))) unlinkSync(join(folderOf(db, 'b'), name)); // as if written before identities: no file of its own
    const Database = (await import('better-sqlite3')).default;
    const w = new Database(db);
    w.prepare('UPDATE attempts SET log_path = ?').run(shared);
    w.close();
    const r = await cli(['logs', 'f000.log', '--batch', 'b'], p.dir, {}, 2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('outside this store\'s log folder');
  });

  it('a pre-existing 0777 logs folder ends 0700, as do the folders made under it', async () => {
    const p = projectWithFiles(1);
    const logs = join(p.dir, '.splitdance', 'logs');
    mkdirSync(logs, { recursive: true });
    chmodSync(logs, 0o777);
    await cli(['run', 'src', '--batch', 'b', '--exec', 'echo out {/}'], p.dir);
    const folder = folderOf(dbPathIn(p.dir), 'b');
    expect([mode(logs), mode(dirname(folder)), mode(folder)]).toEqual([0o700, 0o700, 0o700]);
  });

  it('a symlink in place of the store\'s log folder is refused (exit 4), its target untouched', async () => {
    const p = projectWithFiles(1);
    await cli(['run', 'src', '--batch', 'first', '--exec', 'true'], p.dir);
    const db = dbPathIn(p.dir);
    const elsewhere = join(p.dir, 'elsewhere');
    mkdirSync(elsewhere);
    symlinkSync(elsewhere, folderOf(db, 'second'));
    const r = await cli(['run', 'src', '--batch', 'second', '--exec', 'echo out {/}'], p.dir, {}, 4);
    expect(r.stderr).toMatch(/log folder .* is a symlink/);
    expect(readdirSync(elsewhere)).toEqual([]);
  });

  it('a dangling symlink given as the store path gives a 0600 store, even with umask 022', async () => {
    const p = projectWithFiles(1);
    const target = join(p.dir, 'real.db');
    symlinkSync(target, join(p.dir, 'link.db'));
    const old = process.umask(0o022);
    try {
      await cli(['run', 'src', '--db', 'link.db', '--exec', 'true'], p.dir);
    } finally {
      process.umask(old);
    }
    expect(lstatSync(join(p.dir, 'link.db')).isSymbolicLink()).toBe(true);
    expect(mode(target)).toBe(0o600);
  });
});

/** The environment as it is (the default launcher). */
const noEnv: Record<string, string> = {};
const modes = [
  { name: 'the spawner helper', env: noEnv },
  { name: "Node's spawn", env: { SPLITDANCE_SPAWNER: 'node' } },
];

describe.each(modes)('--exec logs through $name', ({ env }) => {
  it("are written in the layout: <logs>/<store identity>/<batch folder>/<attempt id>.log, moved into the worker's segment at the end, 0600 in 0700 folders", async () => {
    const p = projectWithFiles(2);
    await cli(['run', 'src', '--batch', 'x/y', '--exec', 'echo out {/}; echo err >&2'], p.dir, env);
    const db = dbPathIn(p.dir);
    const folder = folderOf(db, 'x/y');
    for (const a of await attemptLogs(db)) {
      const { path, name } = logRange(a.log_path!);
      expect(dirname(path)).toBe(folder);
      expect(path.slice(folder.length + 1)).toMatch(SEGMENT);
      expect(name).toBe(`${a.id}.log`);
      expect(logText(a.log_path!)).toBe(`out ${a.key}\nerr\n`);
      expect(mode(path)).toBe(0o600);
    }
    expectSegmentsOnly(folder);
    expect(mode(folder)).toBe(0o700);
    expect(mode(dirname(folder))).toBe(0o700);
  });

  it('never follow a symlink planted where a log will be written', async () => {
    const p = projectWithFiles(1);
    await cli(['run', 'src', '--batch', 'first', '--exec', 'true'], p.dir, env); // attempt 1: the store and its identity
    const folder = folderOf(dbPathIn(p.dir), 'second');
    mkdirSync(folder, { recursive: true, mode: 0o700 });
    const target = join(p.dir, 'precious.txt');
    writeFileSync(target, 'precious\n');
    symlinkSync(target, join(folder, '2.log'));
    await cli(['run', 'src', '--batch', 'second', '--exec', 'echo written {/}'], p.dir, env);
    expect(readFileSync(target, 'utf8')).toBe('precious\n');
    // The symlink was replaced by the attempt's own file, which then went into a segment.
    expect(existsSync(join(folder, '2.log'))).toBe(false);
    expectSegmentsOnly(folder);
    expect(await logsOf(p.dir, 'f000.log', ['--batch', 'second'])).toBe('written f000.log\n');
  });
});

describe('log segments', () => {
  it('200 attempts at -j 2 leave a few segments, each attempt reading back its own output; a log over 1 MiB keeps its own file; prune deletes them all', async () => {
    const p = projectWithFiles(200);
    // f000.log prints 1.5 MiB: too big to be worth the copy.
    await cli(['run', 'src', '--batch', 'many', '-j', '2', '--exec', 'if [ {/} = f000.log ]; then head -c 1572864 /dev/zero | tr "\\0" x; fi; echo "out of {/}"; echo "err of {/}" >&2'], p.dir);
    const db = dbPathIn(p.dir);
    const folder = folderOf(db, 'many');
    const names = readdirSync(folder);
    const segments = names.filter((n) => SEGMENT.test(n));
    expect(names.filter((n) => !SEGMENT.test(n))).toEqual([`${(await attemptLogs(db)).find((a) => a.key === 'f000.log')!.id}.log`]);
    // One per worker process writing (the pool's, here this process's), each well under 64 MiB.
    expect(segments.length).toBeGreaterThan(0);
    expect(segments.length).toBeLessThanOrEqual(2);
    for (const a of await attemptLogs(db)) if (a.key !== 'f000.log') expect(logText(a.log_path!)).toBe(`out of ${a.key}\nerr of ${a.key}\n`);
    expect(await logsOf(p.dir, 'f123.log', ['--batch', 'many'])).toBe('out of f123.log\nerr of f123.log\n');
    expect((await logsOf(p.dir, 'f000.log', ['--batch', 'many'])).length).toBe(1572864 + 'out of f000.log\nerr of f000.log\n'.length);
    const all = (await cli(['logs', '--batch', 'many'], p.dir)).stdout;
    expect(all).toContain('==> f199.log <==\nout of f199.log\nerr of f199.log\n');
    await cli(['prune', '--batch', 'many'], p.dir);
    expect(existsSync(folder)).toBe(false);
  });
});

describe('log segments across prunes', () => {
  it('a batch pruned and made again under its name, in the same process: the new attempts go to a new segment, each readable', async () => {
    const p = projectWithFiles(3);
    // The CLI runs in this process, as a long-lived worker --follow would: its segments stay open between runs.
    await cli(['run', 'src', '--batch', 'nightly', '--exec', 'echo first {/}'], p.dir);
    await cli(['prune', '--batch', 'nightly'], p.dir);
    await cli(['run', 'src', '--batch', 'nightly', '--exec', 'echo second {/}'], p.dir);
    const all = (await cli(['logs', '--batch', 'nightly'], p.dir)).stdout;
    expect(all).toBe(['f000.log', 'f001.log', 'f002.log'].map((k) => `==> ${k} <==\nsecond ${k}\n`).join(''));
  });

  it("a prune killed after a batch's rows went, before its segments: the next prune deletes them", async () => {
    const p = projectWithFiles(2);
    await cli(['run', 'src', '--batch', 'gone', '--exec', 'echo out {/}'], p.dir);
    await cli(unfinished('keep', 'kept'), p.dir, {}, 3);
    const db = dbPathIn(p.dir);
    const folder = folderOf(db, 'gone');
    expectSegmentsOnly(folder);
    // What the killed prune committed: the batch's rows, not its files.
    const Database = (await import('better-sqlite3')).default;
    const w = new Database(db);
    w.exec(`DELETE FROM attempts WHERE task_id IN (SELECT id FROM tasks WHERE batch_id = (SELECT id FROM batches WHERE name = 'gone'));
      DELETE FROM tasks WHERE batch_id = (SELECT id FROM batches WHERE name = 'gone'); DELETE FROM batches WHERE name = 'gone';`);
    w.close();
    await cli(['prune'], p.dir);
    expect(existsSync(folder)).toBe(false);
    // The live batch's segments stay.
    expectSegmentsOnly(folderOf(db, 'keep'));
    expect(await logsOf(p.dir, 'f001.log', ['--batch', 'keep'])).toBe('kept f001.log\n');
  });
});

describe('module handler logs', () => {
  it('are written in the layout, never through a planted symlink', async () => {
    const p = projectWithFiles(1);
    const mod = join(p.dir, 'talk.mjs');
    writeFileSync(mod, 'export default async (task) => { console.log(`said ${task.key}`); };\n');
    await cli(['run', 'src', '--batch', 'first', '--handler', mod], p.dir); // attempt 1
    const db = dbPathIn(p.dir);
    const folder = folderOf(db, 'second');
    mkdirSync(folder, { recursive: true, mode: 0o700 });
    const target = join(p.dir, 'precious.txt');
    writeFileSync(target, 'precious\n');
    symlinkSync(target, join(folder, '2.log'));
    await cli(['run', 'src', '--batch', 'second', '--handler', mod], p.dir);
    expect(readFileSync(target, 'utf8')).toBe('precious\n');
    const logs = (await attemptLogs(db)).map((a) => logRange(a.log_path!));
    expect(logs.map((l) => [dirname(l.path), l.name])).toEqual([
      [folderOf(db, 'first'), '1.log'],
      [folder, '2.log'],
    ]);
    expect(mode(logs[1]!.path)).toBe(0o600);
    expectSegmentsOnly(folder);
    expect(await logsOf(p.dir, 'f000.log', ['--batch', 'second'])).toBe('said f000.log\n');
  });
});

const URL = PG_URL;
const freshDb = pgSchemas('logs');

describe.skipIf(!URL)('logs of two PostgreSQL schemas', () => {
  it('with the same batch name stay apart, and pruning one leaves the other\'s', async () => {
    const p = projectWithFiles(1);
    const [a, b] = [freshDb().db, freshDb().db] as [string, string];
    await cli(['run', 'src', '--db', a, '--batch', 'same', '--exec', 'echo from-a {/}'], p.dir);
    await cli(['run', 'src', '--db', b, '--batch', 'same', '--exec', 'echo from-b {/}'], p.dir);
    expect(await logsOf(p.dir, 'f000.log', ['--db', a, '--batch', 'same'])).toBe('from-a f000.log\n');
    expect(await logsOf(p.dir, 'f000.log', ['--db', b, '--batch', 'same'])).toBe('from-b f000.log\n');
    await cli(['prune', '--db', a, '--older-than', '0s'], p.dir);
    expect(await logsOf(p.dir, 'f000.log', ['--db', b, '--batch', 'same'])).toBe('from-b f000.log\n');
    expect(readdirSync(join(p.dir, '.splitdance', 'logs'))).toHaveLength(2);
  });
});
