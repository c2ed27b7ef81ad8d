import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { handler, tempDir } from '../helpers/cli.js';
import { mainIn, setProcessEnv } from '../helpers/in-process-cli.js';
import { PG_URL, pgSchemas } from '../helpers/pg.js';
import { dbPathIn } from '../helpers/store.js';

const freshPg = pgSchemas('outputs');
/** Both stores: the default SQLite file of the project, and a fresh schema on the PostgreSQL server. */
const STORES = [
  { store: 'SQLite', db: (dir: string) => dbPathIn(dir) },
  ...(PG_URL ? [{ store: 'PostgreSQL', db: () => freshPg().db }] : []),
];

/** Every file under `dir`, relative, hidden ones included (a temporary file left behind is one). */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1))
    .sort();
}

function project(n: number): { dir: string; src: string; out: string; keys: string[] } {
  const dir = tempDir('sd-out-');
  const src = join(dir, 'src');
  const keys: string[] = [];
  for (let i = 0; i < n; i++) {
    const key = `${i % 3 === 0 ? 'sub/' : ''}f${String(i).padStart(2, '0')}.log`;
    mkdirSync(join(src, key, '..'), { recursive: true });
    writeFileSync(join(src, key), `line ${i}\n`.repeat(50 + i));
    keys.push(key);
  }
  // Inputs an hour old: an output written now is newer, whatever the file system's time granularity.
  const past = new Date(Date.now() - 3_600_000);
  for (const k of keys) utimesSync(join(src, k), past, past);
  return { dir, src, out: join(dir, 'out'), keys: keys.sort() };
}

const statusOf = async (args: string[], cwd: string) => JSON.parse((await mainIn(cwd, ['status', '--json', ...args])).stdout);
const tasksOf = async (args: string[], cwd: string) =>
  JSON.parse((await mainIn(cwd, ['tasks', '--json', ...args])).stdout) as { key: string; status: string; upToDate: boolean }[];

describe.each(STORES)('declared outputs on $store', ({ db: dbFor }) => {
  it('40 files → gzip: every output correct, nothing temporary left; a new batch runs only what changed', async () => {
    const p = project(40);
    const db = dbFor(p.dir);
    const gzip = ['--exec', 'gzip -c {} > {out}', '--output', 'out/{rel}.gz', '--db', db, '-j', '2'];
    const first = await mainIn(p.dir, ['run', 'src', '--batch', 'night-1', ...gzip]);
    expect(first.code, first.stderr).toBe(0);
    expect(filesUnder(p.out)).toEqual(p.keys.map((k) => `${k}.gz`).sort());
    for (const k of p.keys) expect(gunzipSync(readFileSync(join(p.out, `${k}.gz`))).toString()).toBe(readFileSync(join(p.src, k), 'utf8'));

    // The next night: a new batch over the same folder runs nothing, and says so everywhere.
    const dry = await mainIn(p.dir, ['run', 'src', '--batch', 'night-2', ...gzip, '--dry-run', '--json']);
    expect(JSON.parse(dry.stdout).upToDate).toBe(40);
    const before = new Map(p.keys.map((k) => [k, statSync(join(p.out, `${k}.gz`)).mtimeMs]));
    const second = await mainIn(p.dir, ['run', 'src', '--batch', 'night-2', ...gzip, '--json']);
    expect(second.code, second.stderr).toBe(0);
    const end = JSON.parse(second.stdout.trim().split('\n').at(-1)!);
    expect(end).toMatchObject({ event: 'end', succeeded: 40, upToDate: 40 });
    for (const k of p.keys) expect(statSync(join(p.out, `${k}.gz`)).mtimeMs).toBe(before.get(k)); // not rewritten
    const s2 = await statusOf(['--batch', 'night-2', '--db', db], p.dir);
    expect(s2).toMatchObject({ total: 40, succeeded: 40, upToDate: 40, done: true });
    expect((await tasksOf(['--batch', 'night-2', '--db', db], p.dir)).every((t) => t.status === 'SUCCESS' && t.upToDate)).toBe(true);
    const show = await mainIn(p.dir, ['show', p.keys[0]!, '--batch', 'night-2', '--db', db]);
    expect(show.stdout).toContain('up to date');
    const human = await mainIn(p.dir, ['status', '--batch', 'night-2', '--db', db]);
    expect(human.stdout).toContain('40 succeeded (40 up to date, not run)');

    // One input touched: the third night runs exactly that one.
    const touched = p.keys[7]!;
    writeFileSync(join(p.src, touched), 'changed\n');
    const third = await mainIn(p.dir, ['run', 'src', '--batch', 'night-3', ...gzip]);
    expect(third.code, third.stderr).toBe(0);
    const ran = (await tasksOf(['--batch', 'night-3', '--db', db], p.dir)).filter((t) => !t.upToDate).map((t) => t.key);
    expect(ran).toEqual([touched]);
    expect(gunzipSync(readFileSync(join(p.out, `${touched}.gz`))).toString()).toBe('changed\n');

    // --force runs them all anyway.
    const forced = await mainIn(p.dir, ['run', 'src', '--batch', 'night-4', ...gzip, '--force']);
    expect(forced.code, forced.stderr).toBe(0);
    expect((await statusOf(['--batch', 'night-4', '--db', db], p.dir)).upToDate).toBe(0);
    expect(filesUnder(p.out)).toEqual(p.keys.map((k) => `${k}.gz`).sort());
  });

  it('a command that exits 0 without writing {out} fails: "declared output not written"; a failure leaves no file', async () => {
    const p = project(3);
    const db = dbFor(p.dir);
    // f00 writes nothing; f01 writes part of its output and fails; f02 succeeds.
    const exec = 'case {key} in *f00*) true;; *f01*) echo partial > {out}; exit 3;; *) cat {} > {out};; esac';
    const r = await mainIn(p.dir, ['run', 'src', '--exec', exec, '--output', 'out/{rel}.txt', '--db', db, '--retries', '0']);
    expect(r.code, r.stderr).toBe(1);
    const tasks = JSON.parse((await mainIn(p.dir, ['tasks', '--json', '--db', db])).stdout) as { key: string; status: string; lastError: string }[];
    const byKey = new Map(tasks.map((t) => [t.key, t]));
    expect(byKey.get('sub/f00.log')!.lastError).toBe(`declared output not written: ${join(p.out, 'sub/f00.log.txt')} (the command must write it to {out})`);
    expect(byKey.get('f01.log')!.status).toBe('FAILED');
    expect(byKey.get('f02.log')!.status).toBe('SUCCESS');
    expect(filesUnder(p.out)).toEqual(['f02.log.txt']);

    // A timeout kills a command half-way through its output: that goes too.
    const slow = await mainIn(p.dir, ['run', 'src', '--batch', 'slow', '--exec', 'echo part > {out}; sleep 30', '--output', 'slow/{rel}', '--db', db, '--timeout', '300ms', '--retries', '0']);
    expect(slow.code, slow.stderr).toBe(1);
    expect(slow.stderr).toContain('TIMEOUT');
    expect(filesUnder(join(p.dir, 'slow'))).toEqual([]);
  });

  it('a module handler writes task.out; stages name an earlier output as {inputs.STAGE.out}', async () => {
    const p = project(4);
    const db = dbFor(p.dir);
    const job = {
      source: 'src',
      stages: [
        { name: 'upper', handler: handler('write-out'), output: 'out/upper/{rel}' },
        { name: 'count', needs: ['upper'], exec: 'wc -c < {inputs.upper.out} > {out}', output: 'out/count/{rel}.n' },
      ],
    };
    writeFileSync(join(p.dir, 'job.json'), JSON.stringify(job));
    const r = await mainIn(p.dir, ['run', '--job', 'job.json', '--db', db]);
    expect(r.code, r.stderr).toBe(0);
    for (const k of p.keys) {
      const input = readFileSync(join(p.src, k), 'utf8');
      expect(readFileSync(join(p.out, 'upper', k), 'utf8')).toBe(input.toUpperCase());
      expect(readFileSync(join(p.out, 'count', `${k}.n`), 'utf8').trim()).toBe(String(Buffer.byteLength(input)));
    }
    const shown = JSON.parse((await mainIn(p.dir, ['show', `upper/${p.keys[0]}`, '--json', '--db', db])).stdout);
    expect(shown.result.out).toBe(join(p.out, 'upper', p.keys[0]!));
    expect(filesUnder(p.out).filter((f) => f.includes('.tmp'))).toEqual([]);

    // An earlier stage's newer output makes its dependents run again, as make would.
    const again = await mainIn(p.dir, ['run', '--job', 'job.json', '--db', db, '--batch', 'again', '--json']);
    expect(JSON.parse(again.stdout.trim().split('\n').at(-1)!)).toMatchObject({ succeeded: 8, upToDate: 8 });
    const later = new Date(Date.now() + 60_000);
    utimesSync(join(p.out, 'upper', p.keys[1]!), later, later);
    const third = await mainIn(p.dir, ['run', '--job', 'job.json', '--db', db, '--batch', 'third', '--json']);
    expect(JSON.parse(third.stdout.trim().split('\n').at(-1)!)).toMatchObject({ succeeded: 8, upToDate: 7 });
  });

  it('a stage result is data: a value with ".." in an output path fails the task, writes nothing outside', async () => {
    const p = project(1);
    const db = dbFor(p.dir);
    const job = {
      source: 'src',
      stages: [
        { name: 'a', handler: handler('write-out'), output: 'out/a/{rel}' },
        { name: 'b', needs: ['a'], exec: 'cat {} > {out}', output: 'out/b/{inputs.a.name}' },
      ],
    };
    writeFileSync(join(p.dir, 'job.json'), JSON.stringify(job));
    const restore = setProcessEnv({ RESULT_NAME: '../../../escaped' }); // read by the handler, in the workers this process forks
    const r = await mainIn(p.dir, ['run', '--job', 'job.json', '--db', db]).finally(restore);
    expect(r.code, r.stderr).toBe(1);
    const b = JSON.parse((await mainIn(p.dir, ['show', `b/${p.keys[0]}`, '--json', '--db', db])).stdout);
    expect(b.status).toBe('FAILED');
    expect(b.attemptsCount).toBe(1); // permanent: no retry could help
    expect(b.lastError).toContain('outside the folder the template names');
    expect(existsSync(join(p.dir, '..', 'escaped'))).toBe(false);
    expect(filesUnder(p.dir).filter((f) => f.includes('escaped'))).toEqual([]);
  });
});

describe('declared outputs: bad input is refused before anything is written', () => {
  const cases: [string, string[], RegExp][] = [
    ['{out} without --output', ['--exec', 'cat {} > {out}'], /no output is declared: add --output/],
    ['{attempt} in --output', ['--exec', 'cat {} > {out}', '--output', 'out/{attempt}/{rel}'], /--output cannot use \{attempt\}/],
    ['a folder as --output', ['--exec', 'cat {} > {out}', '--output', 'out/'], /names a folder/],
    ['{inputs…} without stages', ['--exec', 'cat {} > {out}', '--output', 'out/{inputs.a.out}'], /not a needed stage/],
  ];
  it.each(cases)('%s: exit 2, no store', async (_what, args, message) => {
    const p = project(2);
    const r = await mainIn(p.dir, ['run', 'src', ...args]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(existsSync(join(p.dir, '.splitdance'))).toBe(false);
  });

  it('an output in the job file of a batch with stages belongs to a stage', async () => {
    const p = project(1);
    writeFileSync(join(p.dir, 'job.json'), JSON.stringify({ source: 'src', output: 'out/{rel}', stages: [{ name: 'a', exec: 'cat {} > {out}' }] }));
    const r = await mainIn(p.dir, ['run', '--job', 'job.json']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('each stage declares its own "output"');
    expect(existsSync(join(p.dir, '.splitdance'))).toBe(false);
  });

  it('two tasks on one output file are refused: files with one stem, or the chunks of one file', async () => {
    const p = project(2);
    writeFileSync(join(p.src, 'f01.txt'), 'other\n');
    const stems = await mainIn(p.dir, ['run', 'src', '--exec', 'cat {} > {out}', '--output', 'out/{stem}.gz']);
    expect(stems.code).toBe(2);
    expect(stems.stderr).toContain('gives two tasks one output file: f01.log and f01.txt both write');
    writeFileSync(join(p.dir, 'big.txt'), 'x\n'.repeat(100));
    const chunks = await mainIn(p.dir, ['run', 'big.txt', '--lines', '10', '--exec', 'cat {} > {out}', '--output', 'out/{name}.part']);
    expect(chunks.code).toBe(2);
    expect(chunks.stderr).toContain('big.txt:00000 and big.txt:00001 both write');
    expect(existsSync(join(p.dir, '.splitdance'))).toBe(false);
    // {key} tells chunks apart.
    const ok = await mainIn(p.dir, ['run', 'big.txt', '--lines', '10', '--exec', 'echo {start} > {out}', '--output', 'out/{key}.part']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(filesUnder(p.out)).toHaveLength(10);
  });

  it('the input file itself is never an output', async () => {
    const p = project(1);
    const r = await mainIn(p.dir, ['run', 'src', '--exec', 'cat {} > {out}', '--output', '{}', '--retries', '0']);
    expect(r.code).toBe(2); // found by the planning pass, before anything is written
    expect(r.stderr).toContain('is the input file itself');
    expect(existsSync(join(p.dir, '.splitdance'))).toBe(false);
    expect(execFileSync('cat', [join(p.src, p.keys[0]!)], { encoding: 'utf8' })).toContain('line 0');
  });
});
