import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, tempDir } from '../helpers/cli.js';
import { missing } from '../helpers/services.js';
import { storedAttempts, storedTasks } from '../helpers/store.js';

// `--print` keeps a copy of each attempt's stdout and stderr in TMPDIR until it is printed.
// With TMPDIR full, the copy used to be cut short without a word: the output was printed cut
// mid-line and the run exited 0. Now the attempt fails, saying TMPDIR has no space, nothing of
// the cut copy is printed, and nothing is left in TMPDIR. Here TMPDIR is a 1 MiB tmpfs
// (mounting needs root; CI runs as root).

const isRoot = !missing('root', 'the --print full TMPDIR tests');
const mounts: string[] = [];

afterAll(() => {
  for (const m of mounts) execFileSync('umount', ['-l', m]);
});

/** A 1 MiB tmpfs under `parent`. */
function smallTempDir(parent: string): string {
  const dir = join(parent, 'tmp');
  mkdirSync(dir);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir]);
  mounts.push(dir);
  return dir;
}

const BIG = 3_000_000; // bytes of output of the task "big": more than TMPDIR holds

const HANDLERS = [
  { name: 'a command', args: ['--exec', `if [ {} = big ]; then head -c ${BIG - 1} /dev/zero | tr '\\0' x; echo; else echo {} fine; fi`] },
  {
    name: 'a module handler',
    args: ['--handler', 'talk.mjs'],
    module: `export default async (task) => { console.log(task.item === 'big' ? 'x'.repeat(${BIG - 1}) : task.item + ' fine'); };\n`,
  },
];

describe.skipIf(!isRoot)('--print with a full TMPDIR', () => {
  for (const h of HANDLERS) {
    it(`fails the attempt whose output does not fit, naming TMPDIR, and leaves nothing there: ${h.name}`, async () => {
      const dir = tempDir();
      const tmp = smallTempDir(dir);
      writeFileSync(join(dir, 'items.txt'), 'a\nbig\nc\n');
      if (h.module) writeFileSync(join(dir, 'talk.mjs'), h.module);
      const db = join(dir, 'store.db');
      const r = await runCli(['run', '--items', 'items.txt', ...h.args, '--print', '-j', '2', '--retries', '0', '--db', db], { cwd: dir, env: { TMPDIR: tmp } });
      expect(r.code, r.stderr).toBe(1); // a task failed
      expect(r.stdout.split('\n').sort()).toEqual(['', 'a fine', 'c fine']); // nothing of the cut copy
      const message = `--print could not keep a copy of its stdout in the temporary folder ${tmp} (TMPDIR): no space left`;
      expect(r.stderr).toContain(message);
      const tasks = await storedTasks(db);
      expect(tasks.map((t) => [t.key, t.status])).toEqual([
        ['a', 'SUCCESS'],
        ['big', 'FAILED'],
        ['c', 'SUCCESS'],
      ]);
      expect(tasks[1]!.lastError).toContain(message);
      // Its log has the whole output; TMPDIR has nothing left of the run.
      const [attempt] = (await storedAttempts(db)).filter((a) => a.outcome === 'FAILED');
      expect(statSync(attempt!.logPath!).size).toBe(BIG);
      expect(readdirSync(tmp)).toEqual([]);
    });
  }
});
