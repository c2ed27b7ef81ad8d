import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, tempDir } from '../helpers/cli.js';
import { mainIn } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';

// What cron gives the binary: no terminal, an empty environment, another working directory.
describe('cron', () => {
  it('runs as cron would (no TTY, env -i, another cwd, absolute --db) through two nights', async () => {
    const p = projectWithFiles(30);
    const state = tempDir('sd-state-');
    const db = join(state, 'splitdance.db');
    const cronDir = tempDir('sd-home-');
    const args = ['run', p.src, '--db', db, '--batch', 'nightly-{date}', '--exec', 'sleep 0.2', '-j', '2', '--no-wait', '--quiet'];
    const env = { PATH: '/usr/bin:/bin', HOME: cronDir };
    const night1 = await runCli([...args, '--max-runtime', '1s'], { cwd: cronDir, cleanEnv: true, env });
    expect(night1.code).toBe(3);
    expect(night1.stdout).toBe('');
    expect(night1.stderr).not.toMatch(/[\u001b\r]/); // eslint-disable-line no-control-regex
    const night2 = await runCli(args, { cwd: cronDir, cleanEnv: true, env });
    expect(night2.code, night2.stderr).toBe(0);
    expect(night2.stdout + night2.stderr).toBe(''); // --quiet: nothing for cron to mail
    const tasks = await mainIn(cronDir, ['tasks', '--json', '--db', db, '--status', 'SUCCESS']);
    expect(JSON.parse(tasks.stdout)).toHaveLength(30);
    expect(readdirSync(cronDir)).toEqual([]); // nothing written into the cron working directory
  });
});
