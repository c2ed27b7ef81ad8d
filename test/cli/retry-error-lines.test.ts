import { describe, expect, it } from 'vitest';
import { mainIn } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';

// SPEC §7: the first failure of each new error cluster is printed as it happens — also while
// its task is still retrying — once per cluster, not once per task, on a terminal and without
// (on a terminal: test/e2e/retry-errors-terminal.test.ts). The gz/ folder the commands write into
// is missing in the project they run in.
// `status` shows the clusters of retrying tasks too.

/** 12 tasks, two kinds of error: f000–f003 "alpha", the rest cannot write into a folder that does not exist. */
const EXEC = "case {key} in f00[0-3].log) echo 'alpha broke' >&2; exit 3;; *) gzip -c {} > gz/{rel}.gz;; esac";
/** A long first backoff: every task is still retrying when --max-runtime ends the run (exit 3). */
const ARGS = ['--exec', EXEC, '--backoff', '1h', '--max-runtime', '3s', '-j', '2'];

const errorLines = (lines: string[]) => lines.filter((l) => /^error f\d{3}\.log attempt 1, retrying in /.test(l));

describe('errors while retrying', () => {
  it('without a terminal: one line per kind of error, while the tasks are retrying, before the run ends', async () => {
    const p = projectWithFiles(12);
    // An empty environment (no colour hints) and no terminal: mainIn's Io.
    const r = await mainIn(p.dir, ['run', 'src', ...ARGS, '--progress-interval', '300ms']);
    expect(r.code, r.stderr).toBe(3);
    const lines = r.stderr.split('\n');
    const errors = errorLines(lines);
    expect(errors, r.stderr).toHaveLength(2);
    expect(errors.filter((l) => l.includes('exit code 3: alpha broke'))).toHaveLength(1);
    expect(errors.filter((l) => /exit code 2: .*gz\/f\d{3}\.log\.gz/.test(l))).toHaveLength(1);
    // Printed as it happened: progress lines counting the retrying tasks come after it.
    const first = lines.findIndex((l) => l.startsWith('error '));
    expect(lines.slice(first).some((l) => / done · .* 12 retrying/.test(l)), r.stderr).toBe(true);
    expect(r.stderr).not.toMatch(/^FAILED/m);

    const status = await mainIn(p.dir, ['status']);
    expect(status.stdout).toMatch(/retrying, by error:\n {2}8 × exit code 2: .*\n {2}4 × exit code 3: alpha broke {3}e\.g\. f000\.log/);
  });
});
