import { appendFileSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, sleep, tempDir } from '../helpers/cli.js';
import { dbPathIn, query, storedTasks } from '../helpers/store.js';

/** A chunked file is never run with stale ranges (SPEC §3): one that grew gets new chunks; one that changed is refused. */

const lines = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `line-${String(from + i).padStart(4, '0')}\n`).join('');

/**
 * Everything the store holds of the batch, to prove a refused run wrote nothing. SQL on purpose:
 * every column (the batch's updated_at, a task's seen fingerprint, lease token…), not only what the verbs show.
 */
const dump = (dir: string) => JSON.stringify([query(dbPathIn(dir), 'SELECT * FROM batches'), query(dbPathIn(dir), 'SELECT * FROM tasks ORDER BY id')]);

/** The chunks' byte ranges, in the order the file was split (seq). */
const rangesOf = async (dir: string) =>
  (await storedTasks(dbPathIn(dir))).sort((a, b) => a.seq - b.seq).map((t) => ({ start: t.payload.start!, end: t.payload.end! }));

describe('a chunked file that grew or changed', () => {
  for (const chunking of [['--lines', '100'], ['--chunk-size', '1KiB']]) {
    it(`a log grown by appends, run nightly (${chunking.join(' ')}): every line is processed exactly once`, async () => {
      const dir = tempDir();
      const log = join(dir, 'app.log');
      const seen = join(dir, 'seen');
      const run = () => runCli(['run', 'app.log', ...chunking, '--pipe', '--exec', 'cat >> "$SEEN"', '-j', '1'], { cwd: dir, env: { SEEN: seen } });
      writeFileSync(log, lines(1, 250));
      expect((await run()).code).toBe(0);
      appendFileSync(log, lines(251, 400));
      const second = await run();
      expect(second.code, second.stderr).toBe(0);
      expect(second.stderr).toMatch(/app\.log grew by \d+ bytes/);
      appendFileSync(log, lines(401, 420));
      expect((await run()).code).toBe(0);
      const again = await run(); // nothing new: nothing runs
      expect(again.code, again.stderr).toBe(0);
      expect(again.stderr).toMatch(/\(0 new\)/);
      expect(readFileSync(seen, 'utf8').split('\n').filter(Boolean).sort()).toEqual(lines(1, 420).split('\n').filter(Boolean));
      // The chunks tile the file: consecutive ranges from 0 to its size.
      const ranges = await rangesOf(dir);
      expect(ranges[0]!.start).toBe(0);
      for (let i = 1; i < ranges.length; i++) expect(ranges[i]!.start).toBe(ranges[i - 1]!.end);
      expect(ranges.at(-1)!.end).toBe(readFileSync(log).length);
    });
  }

  it('a run SIGKILLed right after its first write on a grown file, then a file grown again: every line still once', async () => {
    const dir = tempDir();
    const log = join(dir, 'app.log');
    const seen = join(dir, 'seen');
    const run = (env: Record<string, string> = {}) =>
      runCli(['run', 'app.log', '--lines', '100', '--pipe', '--exec', 'cat >> "$SEEN"', '-j', '1'], { cwd: dir, env: { SEEN: seen, ...env } });
    writeFileSync(log, lines(1, 250));
    expect((await run()).code).toBe(0);
    appendFileSync(log, lines(251, 400));
    const killed = await run({ SPLITDANCE_FAILPOINT: 'write:1' });
    expect(killed.signal).toBe('SIGKILL');
    appendFileSync(log, lines(401, 470));
    const r = await run();
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(seen, 'utf8').split('\n').filter(Boolean).sort()).toEqual(lines(1, 470).split('\n').filter(Boolean));
  });

  it('R44: a file written in 4 KiB blocks that cut lines, split every 0.4 s: no chunk gets part of a line, every run exit 0, every line once when the writer stops', async () => {
    const dir = tempDir();
    const log = join(dir, 'out.log');
    const seen = join(dir, 'seen');
    // 17-byte lines: a 4 KiB block ends mid-line unless its number is a multiple of 17.
    const all = Buffer.from(Array.from({ length: 12_000 }, (_, i) => `line-${String(i).padStart(11, '0')}\n`).join(''));
    const blocks = Array.from({ length: Math.ceil(all.length / 4096) }, (_, i) => all.subarray(i * 4096, (i + 1) * 4096));
    expect(all[(blocks.length - 1) * 4096 - 1]).not.toBe(0x0a);
    writeFileSync(log, blocks[0]!);
    let written = 1;
    let runs = 0;
    // The writer holds its last block (the only one that ends a line) until three splits have
    // seen the file end mid-line, however slow the machine.
    const writer = setInterval(() => {
      if (written < blocks.length - 1 || (written === blocks.length - 1 && runs >= 3)) appendFileSync(log, blocks[written++]!);
      if (written === blocks.length) clearInterval(writer);
    }, 20);
    const run = () => runCli(['run', 'out.log', '--chunk-size', '8KiB', '--pipe', '--exec', 'cat >> "$SEEN"', '-j', '1'], { cwd: dir, env: { SEEN: seen } });
    try {
      while (written < blocks.length) {
        const r = await run();
        expect(r.code, `run ${runs + 1}: ${r.stderr}`).toBe(0);
        runs++;
        await sleep(400);
      }
    } finally {
      clearInterval(writer);
    }
    const last = await run();
    expect(last.code, last.stderr).toBe(0);
    expect(readFileSync(log).equals(all)).toBe(true);
    expect(readFileSync(seen, 'utf8').split('\n').filter(Boolean).sort()).toEqual(all.toString().split('\n').filter(Boolean));
    const ranges = await rangesOf(dir);
    expect(ranges[0]!.start).toBe(0);
    for (let i = 1; i < ranges.length; i++) expect(ranges[i]!.start).toBe(ranges[i - 1]!.end);
    for (const { end } of ranges) expect(all[end - 1]).toBe(0x0a);
    expect(ranges.at(-1)!.end).toBe(all.length);
    const status = JSON.parse((await runCli(['status', '--json'], { cwd: dir })).stdout);
    expect(status).toMatchObject({ total: ranges.length, succeeded: ranges.length });
  });

  it('a last line without a newline waits while the file is fresh (a note says so), and runs once it ends with a newline, once the file is still, or with --finished', async () => {
    const dir = tempDir();
    const log = join(dir, 'app.log');
    const seen = join(dir, 'seen');
    const run = (...extra: string[]) => runCli(['run', 'app.log', '--lines', '4', '--pipe', '--exec', 'cat >> "$SEEN"; echo >> "$SEEN"', '-j', '1', ...extra], { cwd: dir, env: { SEEN: seen } });
    const seenLines = () => readFileSync(seen, 'utf8').split('\n').filter(Boolean).sort();
    writeFileSync(log, lines(1, 10) + 'line-0011');
    const first = await run();
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toMatch(/app\.log: its last line \(9 bytes\) has no newline and the file changed .* ago, so that line may still be being written: .*--finished runs it now/);
    expect(seenLines()).toEqual(lines(1, 10).split('\n').filter(Boolean));
    // Completed by its writer: the whole line runs, once.
    appendFileSync(log, '\n' + lines(12, 13) + 'line-0014');
    const second = await run();
    expect(second.code, second.stderr).toBe(0);
    expect(seenLines()).toEqual(lines(1, 13).split('\n').filter(Boolean));
    // A file that stays as it is: its last line runs once the file has been still for a while…
    utimesSync(log, new Date(Date.now() - 3600_000), new Date(Date.now() - 3600_000));
    const still = await run();
    expect(still.code, still.stderr).toBe(0);
    expect(still.stderr).not.toMatch(/has no newline/);
    expect(seenLines()).toEqual([...lines(1, 13).split('\n').filter(Boolean), 'line-0014'].sort());
    expect((await run()).stderr).toMatch(/\(0 new\)/);
    // …or at once with --finished; a file of one unterminated line is no batch until then.
    writeFileSync(join(dir, 'one.log'), 'only');
    const none = await runCli(['run', 'one.log', '--exec', 'true'], { cwd: dir });
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/one\.log holds no whole line yet: .*--finished runs it now/);
    const finished = await runCli(['run', 'one.log', '--exec', 'true', '--finished'], { cwd: dir });
    expect(finished.code, finished.stderr).toBe(0);
    const dirRun = await runCli(['run', '.', '--exec', 'true', '--finished'], { cwd: dir });
    expect(dirRun.code).toBe(2);
    expect(dirRun.stderr).toMatch(/--finished tells that a chunked file is complete; \. is a directory: leave --finished out/);
  });

  it('a changed (not grown) file is exit 2 before anything is written, offering --batch NEW, also with --rerun-changed', async () => {
    const dir = tempDir();
    const log = join(dir, 'app.log');
    writeFileSync(log, lines(1, 250));
    expect((await runCli(['run', 'app.log', '--lines', '100', '--exec', 'true'], { cwd: dir })).code).toBe(0);
    const before = dump(dir);
    const edits: [string, string | Buffer][] = [
      ['a line inserted at the top', 'NEW-TOP\n' + lines(1, 250)],
      ['shorter', lines(1, 200)],
      ['one byte changed', lines(1, 250).replace('line-0123', 'line-X123')],
    ];
    for (const [what, content] of edits) {
      writeFileSync(log, content);
      for (const extra of [[], ['--rerun-changed']]) {
        const r = await runCli(['run', 'app.log', '--exec', 'true', ...extra], { cwd: dir });
        expect(r.code, `${what} ${extra.join(' ')}: ${r.stderr}`).toBe(2);
        expect(r.stderr).toMatch(/app\.log changed since batch .* chunked it: .*--batch NEW/);
        expect(r.stderr.trim().split('\n')).toHaveLength(1);
        expect(dump(dir)).toBe(before);
      }
    }
    // A new batch runs the new file.
    const fresh = await runCli(['run', 'app.log', '--exec', 'true', '--batch', 'app-2'], { cwd: dir });
    expect(fresh.code, fresh.stderr).toBe(0);
  });

  it('a last line without a newline that was extended, or a new chunk size, is refused too', async () => {
    for (const taken of ['still', '--finished']) {
      const dir = tempDir();
      const log = join(dir, 'app.log');
      writeFileSync(log, lines(1, 10) + 'partial');
      if (taken === 'still') utimesSync(log, new Date(Date.now() - 3600_000), new Date(Date.now() - 3600_000));
      const first = await runCli(['run', 'app.log', '--lines', '4', '--exec', 'true', ...(taken === '--finished' ? ['--finished'] : [])], { cwd: dir });
      expect(first.code, first.stderr).toBe(0);
      expect(await storedTasks(dbPathIn(dir))).toHaveLength(3);
      await refusedOnceExtended(dir, log);
    }
  });

  async function refusedOnceExtended(dir: string, log: string): Promise<void> {
    const before = dump(dir);
    appendFileSync(log, ' line\n');
    const r = await runCli(['run', 'app.log', '--exec', 'true'], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/its last line, which a chunk already ran, was extended/);
    const c = await runCli(['run', 'app.log', '--lines', '5', '--exec', 'true'], { cwd: dir });
    expect(c.code).toBe(2);
    expect(c.stderr).toMatch(/a new chunking needs a new batch: .*--batch NEW/);
    expect(dump(dir)).toBe(before);
  }
});
