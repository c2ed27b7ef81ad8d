import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler } from '../helpers/cli.js';
import { mainIn, mainInProcessEnv } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { attemptsIn } from '../helpers/read-store.js';
import { dbPathIn } from '../helpers/store.js';

describe('output capture', () => {
  it('keeps a 4 KiB tail in the store and the full output in a log file, only when there is output', async () => {
    const p = projectWithFiles(2);
    const r = await mainIn(p.dir, ['run', 'src', '--exec', 'case {key} in f000.log) seq 1 20000;; esac']);
    expect(r.code).toBe(0);
    const rows = (await attemptsIn(dbPathIn(p.dir)))
      .map((a) => ({ task_key: a.key, output_tail: a.outputTail, log_path: a.logPath }))
      .sort((a, b) => a.task_key.localeCompare(b.task_key));
    expect(Buffer.byteLength(rows[0]!.output_tail!)).toBeLessThanOrEqual(4096);
    expect(rows[0]!.output_tail!.endsWith('19999\n20000\n')).toBe(true);
    expect(rows[1]).toMatchObject({ output_tail: null, log_path: null });
    const logs = await mainIn(p.dir, ['logs', 'f000.log']);
    expect(logs.stdout.split('\n').filter(Boolean)).toHaveLength(20000);
    expect(readdirSync(join(p.dir, '.splitdance', 'logs')).length).toBe(1);
  });

  it('a handler printing 50 MB on stdout and stderr neither blocks nor bloats the store', async () => {
    const p = projectWithFiles(1);
    const r = await mainInProcessEnv(p.dir, ['run', 'src', '--handler', handler('flood')], { FLOOD_MB: '25' });
    expect(r.code, r.stderr).toBe(0);
    const [row] = (await attemptsIn(dbPathIn(p.dir))).map((a) => ({ output_tail: a.outputTail!, log_path: a.logPath! }));
    expect(Buffer.byteLength(row!.output_tail)).toBeLessThanOrEqual(4096);
    expect(statSync(row!.log_path).size).toBe(50 * 1024 * 1024);
    expect(statSync(dbPathIn(p.dir)).size).toBeLessThan(1024 * 1024);
  });
});
