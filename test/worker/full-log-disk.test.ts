import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { mainInProcessEnv } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { missing } from '../helpers/services.js';
import { attemptsIn } from '../helpers/read-store.js';
import { dbPathIn } from '../helpers/store.js';

// A full log folder must not change what an attempt's outcome is, and must say why the
// output has no log. Logs live under the store's folder (`.splitdance/logs/`), which each
// test puts on a tiny tmpfs filled to the last byte (mounting needs root; CI runs as root).

const isRoot = !missing('root', 'the full log disk tests');
const mounts: string[] = [];

afterAll(() => {
  for (const m of mounts) execFileSync('umount', ['-l', m]);
});

/** A project whose log folder is a full tmpfs. */
function projectWithFullLogDisk(files: number) {
  const p = projectWithFiles(files);
  const logs = join(p.dir, '.splitdance', 'logs');
  mkdirSync(logs, { recursive: true });
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=128k', 'tmpfs', logs]);
  mounts.push(logs);
  fill(logs);
  return { ...p, logs };
}

function fill(dir: string): void {
  try {
    execFileSync('dd', ['if=/dev/zero', `of=${join(dir, 'fill')}`, 'bs=4k'], { stdio: 'ignore' });
  } catch {
    // dd ends with ENOSPC: the disk is full
  }
}

interface Attempt {
  outcome: string;
  exit_code: number | null;
  error: string | null;
  output_tail: string | null;
  log_path: string | null;
}
const attempts = async (dir: string): Promise<Attempt[]> =>
  (await attemptsIn(dbPathIn(dir))).map((a) => ({ outcome: a.outcome!, exit_code: a.exitCode, error: a.error, output_tail: a.outputTail, log_path: a.logPath }));

/** The environment as it is (the default launcher). */
const noEnv: Record<string, string> = {};
const modes = [
  { name: 'spawner helper', env: noEnv },
  { name: "Node's spawn", env: { SPLITDANCE_SPAWNER: 'node' } },
];

describe.skipIf(!isRoot).each(modes)('a full log folder, through the $name', ({ env }) => {
  it('does not fail a command that succeeds; its tail says why it has no log', async () => {
    const p = projectWithFullLogDisk(3);
    const r = await mainInProcessEnv(p.dir, ['run', 'src', '--exec', 'echo hello {}', '--retries', '0'], env);
    expect(r.code, r.stderr).toBe(0);
    const rows = await attempts(p.dir);
    expect(rows.map((a) => a.outcome)).toEqual(['SUCCESS', 'SUCCESS', 'SUCCESS']);
    for (const a of rows) {
      expect(a.exit_code).toBe(0);
      expect(a.log_path).toBeNull();
      expect(a.output_tail).toMatch(/\[splitdance\] no (log|output) kept: .*(is full|ENOSPC)/);
    }
  });

  it('fails a failing command with its own exit code, naming the full log folder as the reason it has no log', async () => {
    const p = projectWithFullLogDisk(1);
    const r = await mainInProcessEnv(p.dir, ['run', 'src', '--exec', 'echo hello {}; exit 3', '--retries', '0'], env);
    expect(r.code, r.stderr).toBe(1);
    const [a] = await attempts(p.dir);
    expect(a).toMatchObject({ outcome: 'FAILED', exit_code: 3, log_path: null });
    expect(a!.error).toMatch(/^exit code 3 \(no (log|output) kept: .*(is full|ENOSPC)/);
  });
});

describe.skipIf(!isRoot)('a log folder that fills up while the command runs, through the spawner helper', () => {
  it('the failure its own output writes cause names the full log folder', async () => {
    const p = projectWithFiles(1);
    const logs = join(p.dir, '.splitdance', 'logs');
    mkdirSync(logs, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', logs]);
    mounts.push(logs);
    // The command fills the disk its log is on, then prints: its echo fails (ENOSPC), exit 1.
    const r = await mainInProcessEnv(p.dir, ['run', 'src', '--exec', `dd if=/dev/zero of=${logs}/fill bs=4k 2>/dev/null; echo hello`, '--retries', '0'], {});
    expect(r.code, r.stderr).toBe(1);
    const [a] = await attempts(p.dir);
    expect(a!.error).toMatch(/^exit code 1 \(its log folder .* filled up while it ran/);
  });
});
