import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sleep, startCli, waitFor } from '../helpers/cli.js';
import { mainIn } from '../helpers/in-process-cli.js';
import { PG_URL, pgSchemas } from '../helpers/pg.js';
import { projectWithFiles } from '../helpers/project.js';
import { attemptLines, expectMatchesStatus, expectPromtoolAccepts, samples, storedAttemptLines, type StatusJson } from '../helpers/prometheus.js';

// SPEC §6: `run --metrics-file` writes its file at exit however the run ends, SIGINT included:
// the run is a CLI process for the signal; the file and the store are read in-process
// (the rest of `metrics`: test/status/metrics.test.ts).

const freshSchema = pgSchemas('metrics');
const backends: [string, () => string[]][] = [['sqlite', () => []]];
if (PG_URL) backends.push(['postgres', () => ['--db', freshSchema().db]]);

describe.each(backends)('metrics (%s)', (_backend, dbArgs) => {
  it('run --metrics-file writes the file once more when SIGINT ends the run', async () => {
    const p = projectWithFiles(40);
    const db = dbArgs();
    const file = join(p.dir, 'm.prom');
    // No write between the first and the last: the interval is longer than the run. 40 tasks of
    // 0.5 s on 2 workers: 10 s of work, to be stopped after the first 2 (the first in-process
    // status loads its modules, which takes seconds on a busy machine).
    const run = startCli(['run', 'src', '--batch', 'slow', '--exec', 'sleep 0.5', '-j', '2', '--progress-interval', '1h', '--metrics-file', file, ...db], { cwd: p.dir });
    await waitFor(() => existsSync(file), 20_000, 'the first metrics file');
    for (let done = 0; done < 2; await sleep(20)) {
      const st = await mainIn(p.dir, ['status', '--json', '--batch', 'slow', ...db]);
      done = st.code === 0 || st.code === 3 ? (JSON.parse(st.stdout) as StatusJson).succeeded : 0;
    }
    run.kill('SIGINT');
    const r = await run.result;
    expect(r.code, r.stderr).toBe(130);
    const text = readFileSync(file, 'utf8');
    expectPromtoolAccepts(text);
    const s = await expectMatchesStatus(samples(text), 'slow', p.dir, db);
    expect(s).toMatchObject({ running: 0, done: false });
    expect(s.succeeded).toBeGreaterThanOrEqual(2);
    expect(attemptLines(text)).toEqual(await storedAttemptLines(p.dir, 'slow', db));
  });
});
