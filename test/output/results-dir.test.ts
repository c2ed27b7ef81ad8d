import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/cli.js';
import { mainIn, setProcessEnv } from '../helpers/in-process-cli.js';
import { projectWithFiles, writeFiles } from '../helpers/project.js';

// Issue 41 item 14: `--results DIR` writes each task's final stdout, stderr and seq in GNU
// parallel's layout (DIR/1/KEY/), atomically, for the attempt that ended the task; keys never
// make a path outside DIR.

/** Every path under `dir`, relative, sorted; files with their contents. */
function tree(dir: string): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      const st = lstatSync(path);
      out[relative(dir, path)] = st.isDirectory() ? null : readFileSync(path, 'utf8');
      if (st.isDirectory()) walk(path);
    }
  };
  walk(dir);
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : 1)));
}

/** Bare placeholders: parallel quotes `{}` inside "…" as if it stood bare (its output would differ for that reason alone). */
const EXEC = 'echo out {}; echo err {} >&2';

// --results picks the launcher by setting SPLITDANCE_SPAWNER in this process (src/run/batch-pool.ts): put back after each test.
let restoreEnv = () => {};
afterEach(() => restoreEnv());

describe('run --results DIR', () => {
  beforeEach(() => {
    restoreEnv = setProcessEnv({ SPLITDANCE_SPAWNER: process.env.SPLITDANCE_SPAWNER });
  });

  it('a DIR inside a directory source is never split: the next run has no new tasks', async () => {
    const p = projectWithFiles(3);
    for (let run = 0; run < 3; run++) {
      const r = await mainIn(p.dir, ['run', 'src', '--exec', 'cat {}', '--results', 'src/res', '--batch', `b${run}`, '--force']);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toMatch(/: 3 tasks \(3 new\)/);
    }
  });

  it('makes the same files as parallel --results on the same list: DIR/1/KEY/{stdout,stderr,seq}, / as \\_ and \\ as \\\\', async () => {
    const dir = tempDir();
    const items = ['a', 'b c', 'x/y', 'c\\d', 'tab\there', "it's"];
    writeFileSync(join(dir, 'list.txt'), `${items.join('\n')}\n`);
    const r = await mainIn(dir, ['run', '--items', 'list.txt', '--exec', EXEC, '--results', 'ours', '-j', '1']);
    expect(r.code, r.stderr).toBe(0);
    execFileSync('parallel', ['--will-cite', '-j', '1', '--results', 'theirs', EXEC, '::::', 'list.txt'], { cwd: dir });
    expect(tree(join(dir, 'ours'))).toEqual(tree(join(dir, 'theirs')));
    expect(readFileSync(join(dir, 'ours/1/x\\_y/stdout'), 'utf8')).toBe('out x/y\n');
  });

  it('a directory source: the key 2025/01/app.log is one folder, 2025\\_01\\_app.log, as parallel names that argument', async () => {
    const dir = tempDir();
    writeFiles(join(dir, 'logs'), { '2025/01/app.log': 'x\n', '2025/02/app.log': 'y\n' });
    const r = await mainIn(dir, ['run', 'logs', '--exec', 'cat {}', '--results', 'res']);
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(join(dir, 'res/1/2025\\_01\\_app.log/stdout'), 'utf8')).toBe('x\n');
    expect(readFileSync(join(dir, 'res/1/2025\\_02\\_app.log/stdout'), 'utf8')).toBe('y\n');
    expect(readdirSync(join(dir, 'res'))).toEqual(['1']); // nothing else left in DIR
  });

  it('hostile keys (.., ., newlines, escapes, 300 bytes, ../ paths) stay inside DIR/1, one distinct folder each', async () => {
    const dir = tempDir();
    const res = join(dir, 'deep', 'res');
    const long = 'é'.repeat(150); // 300 bytes
    const items = ['..', '.', '../../escape', 'esc\x1b[2Jx', '\\.', 'two\nlines', '/', `${long}`, `${long}2`, '-'];
    // JSON Lines keyed by a field: a key may hold a newline there.
    writeFileSync(join(dir, 'list.jsonl'), items.map((k) => `${JSON.stringify({ k })}\n`).join(''));
    const r = await mainIn(dir, ['run', '--items', 'list.jsonl', '--key-field', 'k', '--exec', 'printf %s {item.k}', '--results', res]);
    expect(r.code, r.stderr).toBe(0);
    expect(readdirSync(dir).sort()).toEqual(['.splitdance', 'deep', 'list.jsonl']);
    expect(readdirSync(join(dir, 'deep'))).toEqual(['res']);
    expect(readdirSync(res)).toEqual(['1']);
    const names = readdirSync(join(res, '1'));
    expect(names).toHaveLength(items.length);
    for (const name of names) {
      expect(Buffer.byteLength(name)).toBeLessThanOrEqual(255);
      expect(readdirSync(join(res, '1', name)).sort()).toEqual(['seq', 'stderr', 'stdout']);
    }
    const outputs = names.map((n) => readFileSync(join(res, '1', n, 'stdout'), 'utf8')).sort();
    expect(outputs).toEqual([...items].sort());
    expect(names).toContain('\\..');
    expect(names).toContain('\\.');
    expect(names).toContain('\\\\.');
    expect(names).toContain('..\\_..\\_escape');
    expect(names).toContain('two\\nlines');
    expect(names).toContain('\\_');
  });

  it("keeps only the attempt that ended the task: a retried success's, a failure's last", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'list.txt'), 'flaky\nbroken\nfine\n');
    // flaky fails its first attempt, broken every attempt; each prints its attempt number.
    const exec = 'echo "{} attempt {attempt}"; echo "e{attempt}" >&2; case {} in flaky) test {attempt} -gt 1;; broken) false;; esac';
    const r = await mainIn(dir, ['run', '--items', 'list.txt', '--exec', exec, '--retries', '2', '--backoff', '100ms', '--results', 'res']);
    expect(r.code, r.stderr).toBe(1);
    expect(tree(join(dir, 'res'))).toEqual({
      '1': null,
      '1/broken': null,
      '1/broken/seq': '2',
      '1/broken/stderr': 'e3\n',
      '1/broken/stdout': 'broken attempt 3\n',
      '1/fine': null,
      '1/fine/seq': '3',
      '1/fine/stderr': 'e1\n',
      '1/fine/stdout': 'fine attempt 1\n',
      '1/flaky': null,
      '1/flaky/seq': '1',
      '1/flaky/stderr': 'e2\n',
      '1/flaky/stdout': 'flaky attempt 2\n',
    });
  });

  it('works next to --print -k, and a rerun that runs nothing leaves the files alone', async () => {
    const p = projectWithFiles(3);
    const args = ['run', 'src', '--exec', 'echo {key}', '--results', 'res', '--print', '-k'];
    const r = await mainIn(p.dir, args);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(p.keys.map((k) => `${k}\n`).join(''));
    for (const k of p.keys) expect(readFileSync(join(p.dir, 'res/1', k, 'stdout'), 'utf8')).toBe(`${k}\n`);
    writeFileSync(join(p.dir, 'res/1/f000.log/stdout'), 'kept\n');
    const before = statSync(join(p.dir, 'res/1/f001.log/stdout')).mtimeMs;
    const again = await mainIn(p.dir, args);
    expect(again.code, again.stderr).toBe(0);
    expect(readFileSync(join(p.dir, 'res/1/f000.log/stdout'), 'utf8')).toBe('kept\n');
    expect(statSync(join(p.dir, 'res/1/f001.log/stdout')).mtimeMs).toBe(before);
    expect(readdirSync(join(p.dir, 'res'))).toEqual(['1']);
  });

  it("a module handler's console output, and the files' mode follows the umask", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'list.txt'), 'one\n');
    writeFileSync(join(dir, 'h.mjs'), "export default async (task) => { console.log('hi', task.item); console.error('warn'); };\n");
    // The workers inherit this process's umask, as they would the CLI's.
    const umask = process.umask(0o027);
    let r: Awaited<ReturnType<typeof mainIn>>;
    try {
      r = await mainIn(dir, ['run', '--items', 'list.txt', '--handler', 'h.mjs', '--results', 'res']);
    } finally {
      process.umask(umask);
    }
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(join(dir, 'res/1/one/stdout'), 'utf8')).toBe('hi one\n');
    expect(readFileSync(join(dir, 'res/1/one/stderr'), 'utf8')).toBe('warn\n');
    for (const f of ['stdout', 'stderr', 'seq']) expect(statSync(join(dir, 'res/1/one', f)).mode & 0o777).toBe(0o640);
    for (const d of ['res', 'res/1', 'res/1/one']) expect(statSync(join(dir, d)).mode & 0o777).toBe(0o750);
  });

  it('a symlink planted at a key folder is not followed: that task is said, the run exits 1', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'list.txt'), 'a\nb\n');
    mkdirSync(join(dir, 'res/1'), { recursive: true });
    mkdirSync(join(dir, 'elsewhere'));
    symlinkSync(join(dir, 'elsewhere'), join(dir, 'res/1/a'));
    const r = await mainIn(dir, ['run', '--items', 'list.txt', '--exec', 'echo {}', '--results', 'res']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/--results: the files of a could not be written .*is a symlink/);
    expect(readdirSync(join(dir, 'elsewhere'))).toEqual([]);
    expect(readFileSync(join(dir, 'res/1/b/stdout'), 'utf8')).toBe('b\n');
  });

  it('a file where DIR should be is exit 2 before anything is written; the job file\'s "results" is relative to it', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'list.txt'), 'a\n');
    writeFileSync(join(dir, 'taken'), '');
    const bad = await mainIn(dir, ['run', '--items', 'list.txt', '--exec', 'echo {}', '--results', 'taken']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--results .*taken is not a folder/);
    expect(existsSync(join(dir, '.splitdance'))).toBe(false);
    mkdirSync(join(dir, 'jobs'));
    writeFileSync(join(dir, 'jobs/job.json'), JSON.stringify({ items: '../list.txt', exec: 'echo {}', results: 'res' }));
    const r = await mainIn(dir, ['run', '--job', 'jobs/job.json']);
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(join(dir, 'jobs/res/1/a/stdout'), 'utf8')).toBe('a\n');
  });
});
