import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mainIn } from '../helpers/in-process-cli.js';
import { copyDemo, projectWithFiles } from '../helpers/project.js';
import { runInPty, screenLines } from '../helpers/pty.js';

// SPEC §7: every line the plain mode prints also reaches a terminal, after the bar — the failure
// lines, the clusters and the final summary. The terminal is a real pseudo-terminal; the stores
// the commands there read are made in-process.

describe('a run on a terminal prints every line of the plain mode', () => {
  it("the README's demo (run --job fixtures/jobs/clean-logs.json) ends with its summary line", async () => {
    const p = projectWithFiles(0);
    const r = await runInPty(['run', '--job', copyDemo(p.dir), '--db', join(p.dir, 'store.db')], { cwd: p.dir });
    expect(r.code, r.output).toBe(0);
    expect(screenLines(r.output).at(-1)).toMatch(/^done: 7 succeeded, 0 failed of 7 in \S+ \(batch logs-[0-9a-f]+\)$/);
  });

  it('six failures: six FAILED lines, then the bar, then the verdict and the hint', async () => {
    const p = projectWithFiles(8);
    const exec = 'case {key} in f00[0-5].log) echo broken >&2; exit 1;; esac';
    const r = await runInPty(['run', 'src', '--exec', exec, '--retries', '0', '-j', '2'], { cwd: p.dir });
    expect(r.code, r.output).toBe(1);
    const lines = screenLines(r.output);
    for (let i = 0; i < 6; i++) expect(lines.filter((l) => l.startsWith(`FAILED f00${i}.log after 1 attempt:`)), r.output).toHaveLength(1);
    const verdict = lines.findIndex((l) => l.startsWith('finished with failures: 2 succeeded, 6 failed of 8'));
    expect(verdict, r.output).toBeGreaterThan(0);
    expect(lines[verdict - 1]).toMatch(/8\/8 ·/); // the bar's last frame comes before the summary
    expect(lines[verdict + 1]).toMatch(/^see the failures: splitdance status --batch src-[0-9a-f]+; retry them: /);
  });

  it('worker on a terminal ends with the summary too', async () => {
    const p = projectWithFiles(5);
    const db = join(p.dir, 'store.db');
    const exec = 'test {key} != f001.log';
    expect((await mainIn(p.dir, ['run', 'src', '--exec', exec, '--db', db, '--retries', '0', '-j', '1'])).code).toBe(1);
    expect((await mainIn(p.dir, ['retry-failed', '--db', db])).code).toBe(0); // PENDING again, for the worker
    const w = await runInPty(['worker', '--db', db, '-j', '1'], { cwd: p.dir });
    expect(w.code, w.output).toBe(1);
    const lines = screenLines(w.output);
    expect(lines.filter((l) => l.startsWith('FAILED f001.log'))).toHaveLength(1);
    expect(lines.at(-1), w.output).toMatch(/^see the failures: /);
    expect(lines.at(-2), w.output).toMatch(/^finished with failures: 4 succeeded, 1 failed of 5 /);
  });
});
