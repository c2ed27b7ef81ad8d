import { describe, expect, it } from 'vitest';
import { projectWithFiles } from '../helpers/project.js';
import { runInPty, screenLines } from '../helpers/pty.js';

// SPEC §7: the first failure of each new error cluster is printed as it happens — also while
// its task is still retrying — once per cluster; on a terminal, above the progress bar (a pty:
// the binary). Without a terminal: test/cli/retry-error-lines.test.ts.

/** 12 tasks, two kinds of error: f000–f003 "alpha", the rest cannot write into a folder that does not exist. */
const EXEC = "case {key} in f00[0-3].log) echo 'alpha broke' >&2; exit 3;; *) gzip -c {} > gz/{rel}.gz;; esac";
/** A long first backoff: every task is still retrying when --max-runtime ends the run (exit 3). */
const ARGS = ['--exec', EXEC, '--backoff', '1h', '--max-runtime', '3s', '-j', '2'];

const errorLines = (lines: string[]) => lines.filter((l) => /^error f\d{3}\.log attempt 1, retrying in /.test(l));

describe('errors while retrying', () => {
  it('on a terminal: the same lines above the bar', async () => {
    const p = projectWithFiles(12);
    const r = await runInPty(['run', 'src', ...ARGS], { cwd: p.dir });
    expect(r.code, r.output).toBe(3);
    const errors = errorLines(screenLines(r.output));
    expect(errors, r.output).toHaveLength(2);
    expect(errors.filter((l) => l.includes('alpha broke'))).toHaveLength(1);
  });
});
