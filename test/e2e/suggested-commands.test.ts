import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, tempDir } from '../helpers/cli.js';
import { mainIn } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';

/** Characters a terminal acts on: C0 (but newline and tab), DEL, C1, bidi controls. */
// eslint-disable-next-line no-control-regex
const RAW = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/**
 * Runs a command splitdance suggested, exactly as a user pasting it would: through /bin/sh.
 * `status` exits 1 on a batch with failures (its verdict): that is its answer, not an error.
 */
function runSuggested(command: string, cwd: string): string {
  expect(command.startsWith('splitdance ')).toBe(true);
  const script = `splitdance() { "${process.execPath}" "${BIN}" "$@"; }\n${command}`;
  const r = spawnSync('/bin/sh', ['-c', script], { cwd, env: { ...process.env, NO_COLOR: '1' }, encoding: 'utf8' });
  expect(r.status === 0 || (r.status === 1 && command.startsWith('splitdance status')), `${command}: ${r.stderr}`).toBe(true);
  return r.stdout;
}

describe('suggested commands', () => {
  it('the "see the failures" command runs through /bin/sh on the --db and batch given, and runs nothing injected', async () => {
    const p = projectWithFiles(1);
    writeFileSync(join(p.src, '-rf'), 'x\n');
    writeFileSync(join(p.src, 'e\x1bk'), 'x\n');
    const db = join(p.dir, 'elsewhere', 'store.db');
    const batch = "x'; touch P; echo '";
    const run = await mainIn(p.dir, ['run', 'src', '--db', db, '--batch', batch, '--exec', 'echo out of {key}; exit 1', '--retries', '0']);
    expect(run.code).toBe(1);
    const hint = run.stderr.split('\n').find((l) => l.startsWith('see the failures: '))!;
    const [see, retry] = hint.slice('see the failures: '.length).split('; retry them: ');
    expect(see).toContain('--db ');
    expect(retry).toContain('--batch ');

    // Run from another folder with no store of its own: only the --db in the hint can find the batch.
    const other = tempDir();
    const status = runSuggested(see!, other);
    expect(status).toContain(`batch ${batch} (${p.src})`);
    expect(status).toContain('3 failed');
    expect(existsSync(join(other, 'P'))).toBe(false);
    expect(existsSync(join(p.dir, 'P'))).toBe(false);
    expect(existsSync(join(other, '.splitdance'))).toBe(false);

    // `show` suggests `logs` for each attempt: a key starting with `-` and one with ESC work too.
    for (const key of ['-rf', 'e\x1bk']) {
      const show = runSuggested(`splitdance show --db '${db}' --batch '${batch.replace(/'/g, `'\\''`)}' -- '${key}'`, other);
      const logs = show.split('\n').find((l) => l.includes('full output: '))!.split('full output: ')[1]!;
      expect(logs).not.toMatch(RAW);
      expect(runSuggested(logs, other)).toBe(`out of ${key}\n`);
    }
    expect(existsSync(join(other, 'P'))).toBe(false);

    const statusHint = runSuggested(see!, other).split('\n').find((l) => l.startsWith('finished with failures: '))!;
    expect(statusHint).toContain(`--db ${db}`);
  });
});
