import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mainIn } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { query } from '../helpers/store.js';

// SPEC §6: `run` never ends as a silent no-op. A batch that already finished, given another
// handler, output or option, runs nothing, writes nothing and says so (exit 2) with the ways on.

const rows = (db: string) => ({
  batches: query(db, 'SELECT * FROM batches'),
  tasks: query(db, 'SELECT * FROM tasks ORDER BY id'),
  attempts: query(db, 'SELECT * FROM attempts ORDER BY id'),
});

describe('a second run of a finished batch with a changed definition', () => {
  it('another --exec: exit 2 naming both handlers and --batch NEW, nothing written, nothing run', async () => {
    const p = projectWithFiles(4);
    const db = join(p.dir, 'store.db');
    const first = await mainIn(p.dir, ['run', 'src', '--db', db, '--exec', 'echo {key} >> first.txt']);
    expect(first.code, first.stderr).toBe(0);
    const before = rows(db);
    const again = await mainIn(p.dir, ['run', 'src', '--db', db, '--exec', 'echo {key} >> second.txt']);
    expect(again.code).toBe(2);
    const message = again.stderr.trim();
    expect(message.split('\n')).toHaveLength(1);
    expect(message).toContain('already finished (4 succeeded)');
    expect(message).toContain('--exec "echo {key} >> first.txt" → --exec "echo {key} >> second.txt"');
    expect(message).toMatch(/--batch src-[0-9a-f]+-2/);
    expect(message).not.toContain('done:');
    expect(rows(db)).toEqual(before);
    expect(() => readFileSync(join(p.dir, 'second.txt'))).toThrow();
    // The same handler again is the resume it always was: nothing to do, exit 0.
    expect((await mainIn(p.dir, ['run', 'src', '--db', db, '--exec', 'echo {key} >> first.txt'])).code).toBe(0);
  });

  it('another --output, or another option: exit 2, and --force is named where outputs are up to date', async () => {
    const p = projectWithFiles(3);
    const db = join(p.dir, 'store.db');
    const exec = 'cp {} {out}';
    expect((await mainIn(p.dir, ['run', 'src', '--db', db, '--exec', exec, '--output', 'out/{rel}'])).code).toBe(0);
    const before = rows(db);
    const output = await mainIn(p.dir, ['run', 'src', '--db', db, '--exec', exec, '--output', 'copy/{rel}']);
    expect(output.code).toBe(2);
    expect(output.stderr).toContain('output (out/{rel} → copy/{rel})');
    expect(output.stderr).toContain('--force');
    const retries = await mainIn(p.dir, ['run', 'src', '--db', db, '--retries', '7']);
    expect(retries.code).toBe(2);
    expect(retries.stderr).toContain('retries (3 → 7)');
    expect(rows(db)).toEqual(before);
  });

  it('is not refused when there is work: a new file runs with the new handler, and --rerun-changed re-runs a changed one', async () => {
    const p = projectWithFiles(2);
    const db = join(p.dir, 'store.db');
    expect((await mainIn(p.dir, ['run', 'src', '--db', db, '--exec', 'true'])).code).toBe(0);
    writeFileSync(join(p.src, 'new.log'), 'new\n');
    const added = await mainIn(p.dir, ['run', 'src', '--db', db, '--exec', 'echo {key} >> ran.txt']);
    expect(added.code, added.stderr).toBe(0);
    expect(readFileSync(join(p.dir, 'ran.txt'), 'utf8')).toBe('new.log\n');
    writeFileSync(join(p.src, 'f000.log'), 'changed, and longer\n');
    const refused = await mainIn(p.dir, ['run', 'src', '--db', db, '--exec', 'echo {key} >> again.txt']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--rerun-changed re-runs the 1 task whose files changed');
    const rerun = await mainIn(p.dir, ['run', 'src', '--db', db, '--exec', 'echo {key} >> again.txt', '--rerun-changed']);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(readFileSync(join(p.dir, 'again.txt'), 'utf8')).toBe('f000.log\n');
  });

  it('a batch whose unfinished tasks are FAILED keeps the new handler, and the summary says retry-failed --run runs them with it', async () => {
    const p = projectWithFiles(3);
    const db = join(p.dir, 'store.db');
    const broken = await mainIn(p.dir, ['run', 'src', '--db', db, '--exec', 'exit 1', '--retries', '0']);
    expect(broken.code).toBe(1);
    const fixed = await mainIn(p.dir, ['run', 'src', '--db', db, '--exec', 'echo {key} >> fixed.txt']);
    expect(fixed.code).toBe(1);
    expect(fixed.stderr).toContain('handler changed for the unfinished tasks');
    expect(fixed.stderr).toMatch(/retry them with the new handler, now stored: splitdance retry-failed --run --batch src-[0-9a-f]+ --db /);
    const retried = await mainIn(p.dir, ['retry-failed', '--run', '--db', db]);
    expect(retried.code, retried.stderr).toBe(0);
    expect(readFileSync(join(p.dir, 'fixed.txt'), 'utf8').split('\n').filter(Boolean).sort()).toEqual(p.keys);
  });
});
