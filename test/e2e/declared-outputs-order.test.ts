import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, tempDir } from '../helpers/cli.js';
import { missing } from '../helpers/services.js';

/** A project with one input file an hour old (an output written now is newer). */
function project(): { dir: string; out: string; key: string } {
  const dir = tempDir('sd-out-');
  const key = 'sub/f00.log';
  mkdirSync(join(dir, 'src', 'sub'), { recursive: true });
  writeFileSync(join(dir, 'src', key), 'line 0\n'.repeat(50));
  const past = new Date(Date.now() - 3_600_000);
  utimesSync(join(dir, 'src', key), past, past);
  return { dir, out: join(dir, 'out'), key };
}

// strace follows the CLI process and every process it starts: a separate process.
const hasStrace = !missing('strace', 'the fsync → commit → rename → fsync order test');

describe.skipIf(!hasStrace)('declared outputs: the order that makes a success durable', () => {
  it('the temporary file is synced, the success committed naming it, and only then renamed onto the output and its folder synced', async () => {
    const p = project();
    const trace = join(p.dir, 'trace.txt');
    // strace in front of the CLI: -y names each descriptor's file, so the calls can be ordered by
    // path; -s shows the pages written to the WAL, so the commit recording the temporary file is found.
    const args = ['-f', '-y', '-qq', '-s', '65536', '-e', 'trace=fsync,fdatasync,rename,renameat,renameat2,pwrite64', '-o', trace];
    const run = ['run', 'src', '--exec', 'gzip -c {} > {out}', '--output', 'out/{rel}.gz', '-j', '1'];
    const r = await new Promise<{ code: number | null }>((done) => {
      spawn('strace', [...args, process.execPath, BIN, ...run], { cwd: p.dir, stdio: 'ignore' }).on('close', (code) => done({ code }));
    });
    expect(r.code).toBe(0);
    const lines = readFileSync(trace, 'utf8').split('\n');
    const output = join(p.out, `${p.key}.gz`);
    const folder = join(output, '..');
    const prefix = join(folder, `.${basename(output)}.splitdance-`);
    const at = (test: (l: string) => boolean, what: string) => {
      const i = lines.findIndex(test);
      expect(i, what).toBeGreaterThanOrEqual(0);
      return i;
    };
    const renamed = at((l) => /rename/.test(l) && l.includes(prefix) && l.includes(`"${output}"`), 'rename onto the output');
    const temp = lines[renamed]!.slice(lines[renamed]!.indexOf(prefix)).split('"')[0]!;
    const synced = at((l) => /fsync\(\d+</.test(l) && l.includes(`<${temp}>`), 'fsync of the temporary file');
    const committed = at((l) => /pwrite64\(\d+<[^>]*splitdance\.db-wal>/.test(l) && l.includes(basename(temp)), 'the commit recording the temporary file');
    const dirSynced = lines.findIndex((l, i) => i > renamed && /fsync\(\d+</.test(l) && l.includes(`<${folder}>`));
    expect(synced).toBeLessThan(committed);
    expect(committed).toBeLessThan(renamed);
    expect(dirSynced, 'fsync of the output folder after the rename').toBeGreaterThan(renamed);
  });
});
