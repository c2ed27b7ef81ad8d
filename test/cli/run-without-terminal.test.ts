import { statSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { mainIn } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn } from '../helpers/store.js';

// The command in-process sees what cron or `env -i` gives it: an empty environment (no TERM,
// no NO_COLOR) and streams that are not terminals (captureIo).
describe('run without a terminal (cron, env -i)', () => {
  it('prints no escape codes and no carriage returns, a summary, exit 0', async () => {
    const p = projectWithFiles(5);
    const r = await mainIn(p.dir, ['run', 'src', '--exec', 'echo {key}']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout + r.stderr).not.toMatch(/[\u001b\r]/); // eslint-disable-line no-control-regex
    expect(r.stderr).toMatch(/done: 5 succeeded, 0 failed of 5/);
    expect(statSync(dbPathIn(p.dir)).mode & 0o777).toBe(0o600);
  });

  it('--quiet prints nothing on success and the failures on failure', async () => {
    const p = projectWithFiles(2);
    const ok = await mainIn(p.dir, ['run', 'src', '--exec', 'true', '--quiet']);
    expect(ok.code).toBe(0);
    expect(ok.stdout + ok.stderr).toBe('');
    const q = projectWithFiles(2);
    const bad = await mainIn(q.dir, ['run', 'src', '--exec', 'echo broken >&2; exit 9', '--quiet', '--retries', '0']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/FAILED f000\.log after 1 attempt: exit code 9: broken/);
  });

  it('prints a timestamped progress line every --progress-interval', async () => {
    const p = projectWithFiles(6);
    const r = await mainIn(p.dir, ['run', 'src', '--exec', 'sleep 0.3', '-j', '1', '--progress-interval', '500ms']);
    expect(r.code).toBe(0);
    const lines = r.stderr.split('\n').filter((l) => /^\d{4}-\d\d-\d\dT.*\d+\/6 done/.test(l));
    expect(lines.length).toBeGreaterThanOrEqual(2);
  });

  it('--json prints NDJSON events on stdout', async () => {
    const p = projectWithFiles(3);
    const r = await mainIn(p.dir, ['run', 'src', '--exec', 'true', '--json']);
    expect(r.code).toBe(0);
    const events = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(events[0]).toMatchObject({ event: 'start', total: 3 });
    expect(events.filter((e) => e.event === 'attempt')).toHaveLength(3);
    expect(events.at(-1)).toMatchObject({ event: 'end', exitCode: 0, succeeded: 3 });
    expect(r.stderr).toBe('');
  });
});
