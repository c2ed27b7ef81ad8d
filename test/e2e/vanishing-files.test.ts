import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { missing } from '../helpers/services.js';
import { mainIn } from '../helpers/in-process-cli.js';

// A file listed by the split and gone before it is looked at (another process cleaning up the
// folder) is not a task: the run says so and goes on. The vanishing is made exact with strace's
// fault injection: every stat of that one path fails with ENOENT, as if it had just been removed;
// strace follows the CLI as a process.

const hasStrace = !missing('strace', 'the file-removed-during-the-split test (fault injection)');

describe.skipIf(!hasStrace)('a file removed during the split', () => {
  it('is skipped with a note naming it, not "unexpected error: ENOENT"; the other files run', async () => {
    const p = projectWithFiles(3);
    const gone = join(p.src, p.keys[1]!);
    const calls = 'statx,newfstatat,stat,lstat';
    const args = ['-qq', '-f', '-P', gone, '-e', `trace=${calls}`, '-e', `inject=${calls}:error=ENOENT`, '-o', '/dev/null'];
    const r = await new Promise<{ code: number | null; stderr: string }>((done) => {
      let stderr = '';
      const child = spawn('strace', [...args, process.execPath, BIN, 'run', 'src', '--exec', 'true'], { cwd: p.dir, stdio: ['ignore', 'ignore', 'pipe'] });
      child.stderr.on('data', (b) => (stderr += b));
      child.on('close', (code) => done({ code, stderr }));
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`skipped 1 file (removed during the split): ${gone}`);
    expect(r.stderr).not.toContain('unexpected error');
    const tasks = JSON.parse((await mainIn(p.dir, ['tasks', '--json'])).stdout) as { key: string; status: string }[];
    expect(tasks.map(({ key, status }) => ({ key, status })).sort((a, b) => a.key.localeCompare(b.key))).toEqual([
      { key: p.keys[0], status: 'SUCCESS' },
      { key: p.keys[2], status: 'SUCCESS' },
    ]);
  });
});
