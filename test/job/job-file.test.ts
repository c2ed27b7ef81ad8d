import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { ROOT, handler } from '../helpers/cli.js';
import { jsonOf, mainIn } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { readStore } from '../helpers/read-store.js';
import { dbPathIn } from '../helpers/store.js';

/** The definition stored with the store's first batch. */
const storedJob = async (dir: string): Promise<any> => readStore(dbPathIn(dir), async (s) => (await s.listBatches())[0]!.job);
const batchNames = async (dir: string) => (await jsonOf<{ batch: string }[]>(dir, ['batches'])).map((b) => ({ name: b.batch }));

describe('job file', () => {
  it('a misspelt or mistyped field fails with exit 2 naming the field, what was expected and what arrived', async () => {
    const p = projectWithFiles(2);
    writeFileSync(join(p.dir, 'splitdance.json'), JSON.stringify({ source: 'src', exec: 'true', retires: 2 }));
    const r = await mainIn(p.dir, ['run']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/splitdance\.json: unknown field "retires" \(did you mean "retries"\?\)/);
    writeFileSync(join(p.dir, 'splitdance.json'), JSON.stringify({ source: 'src', exec: 'true', retries: 'three', timeout: '5' }));
    const t = await mainIn(p.dir, ['run']);
    expect(t.code).toBe(2);
    expect(t.stderr).toMatch(/field "retries": expected number, received string \(received "three"\)/);
    expect(t.stderr).toMatch(/field "timeout": expected a duration/);
    expect(existsSync(dbPathIn(p.dir))).toBe(false); // nothing was created
  });

  it('a value nested 5,000 levels deep: exit 2 naming the field, not a stack overflow', async () => {
    const p = projectWithFiles(2);
    const deep = (n: number, open: string, close: string, inner: string) => open.repeat(n) + inner + close.repeat(n);
    for (const [field, value] of [
      ['include', deep(5000, '[', ']', '')],
      ['stages', deep(5000, '{"a":', '}', '1')],
      ['permanentErrors', deep(100_000, '[', ']', '"x"')],
    ] as const) {
      writeFileSync(join(p.dir, 'job.json'), `{"exec": "true", "${field}": ${value}}`);
      const r = await mainIn(p.dir, ['run', 'src', '--job', 'job.json']);
      expect(r.code, field).toBe(2);
      expect(r.stderr).toMatch(new RegExp(`^splitdance: error: job file .*job\\.json: field "${field}\\.[^"]*" is nested more than 64 levels deep`, 'm'));
      expect(r.stderr).not.toMatch(/call stack|unexpected/);
    }
  });

  it('a valid file produces the same batch as the equivalent flags, and flags win over it', async () => {
    const options = { retries: 1, backoff: '50ms', backoffFactor: 2, jitter: 0, timeout: '10s', permanentCodes: [64], include: ['*.log'] };
    const a = projectWithFiles(3);
    writeFileSync(join(a.dir, 'job.json'), JSON.stringify({ source: 'src', handler: handler('ok'), ...options }));
    const ra = await mainIn(a.dir, ['run', '--job', 'job.json']);
    expect(ra.code, ra.stderr).toBe(0);
    const b = projectWithFiles(3);
    const rb = await mainIn(b.dir, [
      'run', 'src', '--handler', handler('ok'), '--retries', '1', '--backoff', '50ms', '--backoff-factor', '2', '--jitter', '0', '--timeout', '10s', '--permanent-codes', '64', '--include', '*.log',
    ]);
    expect(rb.code, rb.stderr).toBe(0);
    const ja = await storedJob(a.dir);
    const jb = await storedJob(b.dir);
    expect({ ...ja, source: null }).toEqual({ ...jb, source: null });
    expect(ja.version).toBe(1);

    const c = projectWithFiles(2);
    writeFileSync(join(c.dir, 'splitdance.json'), JSON.stringify({ source: 'src', exec: 'exit 3', retries: 5, batch: 'from-file' }));
    const rc = await mainIn(c.dir, ['run', '--job', 'splitdance.json', '--exec', 'true', '--retries', '0']);
    expect(rc.code, rc.stderr).toBe(0);
    const jc = await storedJob(c.dir);
    expect(jc.handler).toEqual({ kind: 'exec', template: 'true' });
    expect(jc.retries).toBe(0);
    expect(await batchNames(c.dir)).toEqual([{ name: 'from-file' }]);
  });

  it('./splitdance.json is read when the command line gives no handler, and the start line names it', async () => {
    const p = projectWithFiles(2);
    writeFileSync(join(p.dir, 'splitdance.json'), JSON.stringify({ source: 'src', exec: 'cat {} > {out}', output: 'out/{rel}', retries: 0, batch: 'from-file' }));
    const r = await mainIn(p.dir, ['run']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/^batch from-file: 2 tasks .*, job file \.\/splitdance\.json$/m);
    expect(readFileSync(join(p.dir, 'out/f000.log'), 'utf8')).toBe('line 0\n');
    const json = await mainIn(p.dir, ['run', '--json', '--batch', 'again']);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout.split('\n')[0]!)).toMatchObject({ event: 'start', batch: 'again', jobFile: './splitdance.json' });
  });

  it('with --exec or --handler on the command line, ./splitdance.json is not read, and one line says so (not with --quiet)', async () => {
    const p = projectWithFiles(2);
    // Each of these would change what the one-liner does if the file were read.
    writeFileSync(join(p.dir, 'splitdance.json'), JSON.stringify({ source: 'src', exec: 'exit 3', output: 'out/{rel}', retries: 5, timeout: '1s', batch: 'from-file' }));
    const note = 'not using ./splitdance.json: the command line gives the handler; --job splitdance.json uses it';
    const r = await mainIn(p.dir, ['run', 'src', '--exec', 'cat {} >/dev/null']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr.split('\n')).toContain(note);
    expect(r.stderr).not.toMatch(/job file/);
    const job = await storedJob(p.dir);
    expect(job).toMatchObject({ handler: { kind: 'exec', template: 'cat {} >/dev/null' }, retries: 3 });
    expect(job.output ?? null).toBeNull();
    expect(job.timeoutMs ?? null).toBeNull();
    expect(await batchNames(p.dir)).not.toContainEqual({ name: 'from-file' });

    const m = await mainIn(p.dir, ['run', 'src', '--handler', handler('ok'), '--batch', 'module']);
    expect(m.code, m.stderr).toBe(0);
    expect(m.stderr.split('\n')).toContain(note);
    const quiet = await mainIn(p.dir, ['run', 'src', '--exec', 'cat {} >/dev/null', '--batch', 'quiet', '--quiet']);
    expect(quiet.code, quiet.stderr).toBe(0);
    expect(quiet.stderr).toBe('');
    const json = await mainIn(p.dir, ['run', 'src', '--exec', 'cat {} >/dev/null', '--batch', 'json', '--json']);
    expect(JSON.parse(json.stdout.split('\n')[0]!)).toMatchObject({ event: 'start', jobFile: null, notes: expect.arrayContaining([note]) });
  });

  it('a batch created from a job file resumes with its stored options when a later command line gives the handler', async () => {
    const p = projectWithFiles(3);
    writeFileSync(join(p.dir, 'splitdance.json'), JSON.stringify({ source: 'src', exec: 'cat {} > {out}', output: 'out/{rel}', retries: 0, batch: 'from-file' }));
    const first = await mainIn(p.dir, ['run', '--sample', '1']);
    expect(first.code, first.stderr).toBe(0);
    const r = await mainIn(p.dir, ['run', 'src', '--batch', 'from-file', '--exec', 'cat {} > {out}']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/not using \.\/splitdance\.json/);
    for (const k of p.keys) expect(readFileSync(join(p.dir, 'out', k), 'utf8')).toMatch(/^line \d\n$/); // the stored output
    expect(await storedJob(p.dir)).toMatchObject({ retries: 0, output: { template: 'out/{rel}' } });
  });

  it('every path in a job file is relative to its folder, wherever run is started; flags stay relative to the working folder', async () => {
    const p = projectWithFiles(0);
    const jobs = join(p.dir, 'jobs');
    mkdirSync(join(jobs, 'data'), { recursive: true });
    writeFileSync(join(jobs, 'data', 'a.log'), 'a\n');
    writeFileSync(join(jobs, 'copy.mjs'), "import { copyFile } from 'node:fs/promises';\nexport default async (task) => { await copyFile(task.path, task.out); };\n");
    writeFileSync(join(jobs, 'job.json'), JSON.stringify({ source: 'data', handler: './copy.mjs', output: 'out/{rel}', metricsFile: 'metrics.prom', batch: 'one' }));
    const stages = [
      { name: 'copy', exec: 'cat {} > {out}', output: 'staged/{rel}' },
      { name: 'beside', needs: ['copy'], exec: 'cat {inputs.copy.out} > {out}', output: '{dir}/{name}.beside' }, // absolute once rendered
    ];
    writeFileSync(join(jobs, 'stages.json'), JSON.stringify({ source: 'data', stages, batch: 'two' }));
    const away = join(p.dir, 'elsewhere');
    mkdirSync(away);
    for (const job of ['job.json', 'stages.json']) {
      const r = await mainIn(away, ['run', '--job', join('..', 'jobs', job)]);
      expect(r.code, r.stderr).toBe(0);
    }
    expect(readFileSync(join(jobs, 'out', 'a.log'), 'utf8')).toBe('a\n');
    expect(existsSync(join(jobs, 'metrics.prom'))).toBe(true);
    expect(readFileSync(join(jobs, 'staged', 'a.log'), 'utf8')).toBe('a\n');
    expect(readFileSync(join(jobs, 'data', 'a.log.beside'), 'utf8')).toBe('a\n');
    expect(existsSync(join(away, 'out'))).toBe(false);
    expect(existsSync(join(away, 'staged'))).toBe(false);
    // The store is not a path of the job file: the working folder's, as for every command.
    expect(existsSync(dbPathIn(away))).toBe(true);

    const flag = await mainIn(away, ['run', '--job', '../jobs/job.json', '--batch', 'three', '--output', 'flag/{rel}']);
    expect(flag.code, flag.stderr).toBe(0);
    expect(readFileSync(join(away, 'flag', 'a.log'), 'utf8')).toBe('a\n');
  });

  it('a batch whose stored output is relative to the working folder (an older version) keeps writing there', async () => {
    const p = projectWithFiles(0);
    const jobs = join(p.dir, 'jobs');
    mkdirSync(join(jobs, 'data'), { recursive: true });
    for (const n of ['a', 'b', 'c']) writeFileSync(join(jobs, 'data', `${n}.log`), `${n}\n`);
    writeFileSync(join(jobs, 'job.json'), JSON.stringify({ source: 'data', exec: 'cat {} > {out}', output: 'out/{rel}', batch: 'old' }));
    const first = await mainIn(p.dir, ['run', '--job', 'jobs/job.json', '--sample', '1']);
    expect(first.code, first.stderr).toBe(0);
    // What a version before this rule stored: the working folder as the output's base, and the file put there.
    const db = new Database(dbPathIn(p.dir));
    const job = JSON.parse((db.prepare('SELECT job FROM batches').get() as { job: string }).job);
    expect(job.output).toEqual({ template: 'out/{rel}', base: jobs });
    db.prepare('UPDATE batches SET job = ?').run(JSON.stringify({ ...job, output: { template: 'out/{rel}', base: p.dir } }));
    db.close();
    const [done] = (await jsonOf<{ key: string }[]>(p.dir, ['tasks', '--status', 'SUCCESS'])).map((t) => ({ task_key: t.key }));
    mkdirSync(join(p.dir, 'out'));
    renameSync(join(jobs, 'out', done!.task_key), join(p.dir, 'out', done!.task_key));

    const r = await mainIn(p.dir, ['run', '--job', 'jobs/job.json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/changed/);
    for (const n of ['a', 'b', 'c']) expect(readFileSync(join(p.dir, 'out', `${n}.log`), 'utf8')).toBe(`${n}\n`);
    expect((await storedJob(p.dir)).output.base).toBe(p.dir);
  });

  it('the shipped JSON Schema is the one the CLI generates (regenerate with npm run schema)', async () => {
    const r = await mainIn(ROOT, ['schema']);
    expect(r.code).toBe(0);
    expect(JSON.parse(readFileSync(join(ROOT, 'splitdance.schema.json'), 'utf8'))).toEqual(JSON.parse(r.stdout));
    expect(JSON.parse(r.stdout).additionalProperties).toBe(false);
  });
});
