import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, tempDir } from '../helpers/cli.js';
import { dbPathIn, storedTasks } from '../helpers/store.js';

/**
 * Declared output paths no file can have, and folders a link was planted in (SPEC §9), through
 * the built CLI. A task whose output can never be written fails for good at once, and the run
 * ends (a run of two quick tasks takes about a second; 40 s is the bound for a run that
 * would otherwise wait on backoffs of 5 s, 25 s, 125 s, or for ever on a stage).
 */

const ENDS_WITHIN = 40_000;

/** A source folder of the files given (an hour old: an output written now is newer). */
function project(files: string[]): { dir: string; src: string } {
  const dir = tempDir('sd-outpaths-');
  const src = join(dir, 'src');
  const past = new Date(Date.now() - 3_600_000);
  for (const f of files) {
    mkdirSync(join(src, f, '..'), { recursive: true });
    writeFileSync(join(src, f), `${f}\n`);
    utimesSync(join(src, f), past, past);
  }
  return { dir, src };
}

/** The batch's tasks by key. */
const tasksByKey = async (dir: string) => (await storedTasks(dbPathIn(dir))).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));

/** Every name under `dir`, hidden ones (temporary files) included. */
const namesUnder = (dir: string) => (existsSync(dir) ? readdirSync(dir, { recursive: true }).map(String).sort() : []);

describe('an output path no file can have', () => {
  it('a 249-byte name + ".gz.done" fails its task for good at once naming NAME_MAX; the stage that needs it is cancelled and the run ends', async () => {
    const long = 'n'.repeat(249);
    const p = project([long, 'short']);
    const job = {
      source: 'src',
      stages: [
        { name: 'a', exec: 'gzip -c {} > {out}', output: 'out/{name}.gz.done' },
        { name: 'b', needs: ['a'], exec: 'cat {inputs.a.out} > /dev/null' },
      ],
    };
    writeFileSync(join(p.dir, 'job.json'), JSON.stringify(job));
    const r = await runCli(['run', '--job', 'job.json'], { cwd: p.dir, timeoutMs: ENDS_WITHIN });
    expect(r.signal, 'the run ended by itself').toBeNull();
    expect(r.code, r.stderr).toBe(1); // some tasks failed (SPEC exit codes)
    const rows = await tasksByKey(p.dir);
    const failed = rows.find((t) => t.key === `a/${long}`)!;
    expect(failed).toMatchObject({ status: 'FAILED', attempts: 1 });
    expect(failed.lastError).toMatch(/over NAME_MAX \(255 bytes/);
    expect(rows.find((t) => t.key === `b/${long}`)!.status).toBe('CANCELLED');
    expect(rows.filter((t) => t.key.endsWith('/short')).map((t) => t.status)).toEqual(['SUCCESS', 'SUCCESS']);
    // Nothing waits to be placed: no temporary file, and status says the batch is over.
    expect(namesUnder(join(p.dir, 'out'))).toEqual(['short.gz.done']);
    const status = JSON.parse((await runCli(['status', '--json'], { cwd: p.dir })).stdout);
    expect(status).toMatchObject({ done: true, outputsPending: 0 });
  });

  it('a path over PATH_MAX fails its task for good at once naming PATH_MAX, without retries', async () => {
    const p = project(['a.log']);
    const deep = Array.from({ length: 17 }, (_, i) => `${i}`.padEnd(250, 'd')).join('/');
    const r = await runCli(['run', 'src', '--exec', 'gzip -c {} > {out}', '--output', `out/${deep}/{name}.gz`], { cwd: p.dir, timeoutMs: ENDS_WITHIN });
    expect(r.signal, 'the run ended by itself').toBeNull();
    expect(r.code, r.stderr).toBe(1);
    const [row] = await tasksByKey(p.dir);
    expect(row).toMatchObject({ status: 'FAILED', attempts: 1 });
    expect(row!.lastError).toMatch(/over PATH_MAX \(4095 bytes/);
    expect(existsSync(join(p.dir, 'out'))).toBe(false);
  });
});

describe('a symlink planted in an output folder', () => {
  it('nothing is written or replaced through it, the task fails for good naming it; a link the user typed in the template still works', async () => {
    const p = project(['a/x.log', 'a/new.log', 'b/y.log']);
    // The user's own link: `out` is a folder on another disk, as the template names it.
    const disk = join(p.dir, 'disk');
    mkdirSync(disk);
    symlinkSync(disk, join(p.dir, 'out'));
    // Someone who can write the shared output folder plants `a` → elsewhere, where a file
    // newer than the input (it would pass as up to date) is the victim.
    const elsewhere = join(p.dir, 'elsewhere');
    mkdirSync(elsewhere);
    writeFileSync(join(elsewhere, 'x.log.gz'), 'VICTIM');
    symlinkSync(elsewhere, join(disk, 'a'));

    const r = await runCli(['run', 'src', '--exec', 'gzip -c {} > {out}', '--output', 'out/{rel}.gz'], { cwd: p.dir, timeoutMs: ENDS_WITHIN });
    expect(r.signal, 'the run ended by itself').toBeNull();
    expect(r.code, r.stderr).toBe(1);
    const rows = await tasksByKey(p.dir);
    for (const key of ['a/new.log', 'a/x.log']) {
      const row = rows.find((t) => t.key === key)!;
      expect(row, key).toMatchObject({ status: 'FAILED', attempts: 1 });
      expect(row.lastError).toContain(`${join(p.dir, 'out', 'a')} is one (to ${elsewhere})`);
    }
    expect(readFileSync(join(elsewhere, 'x.log.gz'), 'utf8')).toBe('VICTIM');
    expect(namesUnder(elsewhere)).toEqual(['x.log.gz']);
    // The folder below the user's link is walked, made and written as before.
    expect(rows.find((t) => t.key === 'b/y.log')!.status).toBe('SUCCESS');
    expect(namesUnder(join(disk, 'b'))).toEqual(['y.log.gz']);
  });
});
