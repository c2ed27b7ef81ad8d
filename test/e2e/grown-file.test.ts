import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, tempDir } from '../helpers/cli.js';
import { dbPathIn, query } from '../helpers/store.js';

/** A chunked file is never run with stale ranges (SPEC §3): one that grew gets new chunks; one that changed is refused. */

const lines = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `line-${String(from + i).padStart(4, '0')}\n`).join('');

/** Everything the store holds of the batch, to prove a refused run wrote nothing. */
const dump = (dir: string) => JSON.stringify([query(dbPathIn(dir), 'SELECT * FROM batches'), query(dbPathIn(dir), 'SELECT * FROM tasks ORDER BY id')]);

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
      const ranges = query<{ payload: string }>(dbPathIn(dir), 'SELECT payload FROM tasks ORDER BY seq').map((t) => JSON.parse(t.payload) as { start: number; end: number });
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
    const dir = tempDir();
    const log = join(dir, 'app.log');
    writeFileSync(log, lines(1, 10) + 'partial');
    expect((await runCli(['run', 'app.log', '--lines', '4', '--exec', 'true'], { cwd: dir })).code).toBe(0);
    const before = dump(dir);
    appendFileSync(log, ' line\n');
    const r = await runCli(['run', 'app.log', '--exec', 'true'], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/its last line, which a chunk already ran, was extended/);
    const c = await runCli(['run', 'app.log', '--lines', '5', '--exec', 'true'], { cwd: dir });
    expect(c.code).toBe(2);
    expect(c.stderr).toMatch(/a new chunking needs a new batch: .*--batch NEW/);
    expect(dump(dir)).toBe(before);
  });
});
