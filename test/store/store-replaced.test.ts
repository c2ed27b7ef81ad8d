import { copyFileSync, existsSync, renameSync, unlinkSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { handler, waitFor } from '../helpers/cli.js';
import { mainIn, setProcessEnv } from '../helpers/in-process-cli.js';
import { processesWithEnv } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn, logEntries, storedTasks } from '../helpers/store.js';

/** The record handler's log and pace, and a mark to find the run's workers by: in the workers' environment, put back after each test. */
let restoreEnv = () => {};
afterEach(() => restoreEnv());

// RELIABILITY R36: the store file moved aside or deleted under a running coordinator. Its
// connection would go on writing to the moved (or unlinked) file, unseen by any other
// process; a new run at the path would start afresh and run every task again. The running
// coordinator stops instead, exit 4, saying so in one line.

describe('the store moved aside or deleted mid-run (R36)', () => {
  it.each([
    ['moved aside', (db: string) => renameSync(db, `${db}.aside`), 'nothing is at its path now'],
    ['deleted', (db: string) => unlinkSync(db), 'nothing is at its path now'],
  ])('%s: the run stops with exit 4 naming the store', async (_what, replace, said) => {
    const p = projectWithFiles(8);
    const db = dbPathIn(p.dir);
    restoreEnv = setProcessEnv({ SIDE_EFFECT_LOG: p.log, SLEEP_MS: '300', SD_MARK: p.dir });
    const run = mainIn(p.dir, ['run', 'src', '--handler', handler('record'), '-j', '1']);
    await waitFor(() => logEntries(p.log).some((e) => e.type === 'end'), 20_000, 'the first attempt to end');
    replace(db);
    const r = await run;
    expect(r.code, r.stderr).toBe(4);
    const last = r.stderr.trim().split('\n').at(-1)!;
    expect(last).toBe(
      `splitdance: error: the store ${db} was moved, deleted or replaced while in use (${said}); this process stops using it, since what it wrote there would be lost: put the file back, or run again to use what is at the path`,
    );
    // It stopped, rather than running the batch to its end in a file no one sees.
    expect(logEntries(p.log).filter((e) => e.type === 'start').length).toBeLessThan(8);
    await waitFor(() => processesWithEnv(p.dir).length === 0, 5000, 'no worker left behind');
  }, 40_000);

  it('a file put in its place is another store: the run stops rather than write on in the old one', async () => {
    const p = projectWithFiles(8);
    const db = dbPathIn(p.dir);
    restoreEnv = setProcessEnv({ SIDE_EFFECT_LOG: p.log, SLEEP_MS: '300', SD_MARK: p.dir });
    const run = mainIn(p.dir, ['run', 'src', '--handler', handler('record'), '-j', '1']);
    await waitFor(() => logEntries(p.log).some((e) => e.type === 'end'), 20_000, 'the first attempt to end');
    // A copy renamed over the path is a different file (as a restore from a backup would be).
    copyFileSync(db, `${db}.copy`);
    renameSync(`${db}.copy`, db);
    const r = await run;
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr).toContain('another file is at its path now');
    expect(existsSync(db)).toBe(true);
    expect(await storedTasks(db)).toHaveLength(8);
  }, 40_000);
});
