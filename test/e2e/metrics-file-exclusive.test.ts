import { spawn } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { missing } from '../helpers/services.js';

// SPEC §9, "Files splitdance writes": its temporary files are created exclusively, as strace
// sees the CLI process open them.

const hasStrace = !missing('strace', 'the exclusive-create test of the metrics file');

describe.skipIf(!hasStrace)('temporary files are created exclusively', () => {
  it('the metrics file: its temporary file is opened O_EXCL (never through a planted symlink) with a name no one can guess', async () => {
    const p = projectWithFiles(1);
    const trace = join(p.dir, 'trace.txt');
    const run = ['run', 'src', '--exec', 'true', '--metrics-file', 'm/x.prom'];
    const code = await new Promise<number | null>((done) => {
      spawn('strace', ['-f', '-qq', '-e', 'trace=open,openat', '-o', trace, process.execPath, BIN, ...run], { cwd: p.dir, stdio: 'ignore' }).on('close', done);
    });
    expect(code).toBe(0);
    const opens = readFileSync(trace, 'utf8').split('\n').filter((l) => l.includes('/.x.prom.'));
    expect(opens.length).toBeGreaterThan(0);
    for (const l of opens) {
      expect(l).toContain('O_EXCL');
      expect(l).toMatch(/\.x\.prom\.[0-9a-f]{24}\.tmp"/);
    }
    expect(statSync(join(p.dir, 'm')).mode & 0o777).toBe(0o700);
    expect(statSync(join(p.dir, 'm', 'x.prom')).mode & 0o777).toBe(0o600);
  });
});
