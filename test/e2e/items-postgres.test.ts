import { appendFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, tempDir } from '../helpers/cli.js';
import { PG_URL, pgSchemas } from '../helpers/pg.js';

/** Items, --pipe and a grown file on a shared PostgreSQL store, as on SQLite. */
const freshDb = pgSchemas('items');

describe.skipIf(!PG_URL)('items and chunks on PostgreSQL', () => {
  it('items from stdin are finished by a `worker` in another folder that has neither the list nor stdin', async () => {
    const { db } = freshDb();
    const dir = tempDir();
    const elsewhere = tempDir();
    const out = join(dir, 'out');
    mkdirSync(out);
    const items = ["it's $(touch pwned)", '-n', 'a b', 'a b'];
    const exec = ['--exec', 'printf %s {} > "$OUT"/{#}'];
    const first = await runCli(['run', '-', '--db', db, ...exec, '--max-runtime', '1ms', '-j', '1'], { cwd: dir, env: { OUT: out }, input: items.join('\n') });
    expect([0, 3], first.stderr).toContain(first.code);
    expect(first.stderr).toMatch(/1 item of the list repeated/);
    const w = await runCli(['worker', '--db', db, '-j', '2'], { cwd: elsewhere, env: { OUT: out } });
    expect(w.code, w.stderr).toBe(0);
    expect(readdirSync(out).map((f) => readFileSync(join(out, f), 'utf8')).sort()).toEqual(["it's $(touch pwned)", '-n', 'a b'].sort());
    expect(readdirSync(elsewhere)).not.toContain('pwned');
  });

  it('stdin in blocks (run - --pipe) is finished by a `worker` in another folder: each block is in its task', async () => {
    const { db } = freshDb();
    const dir = tempDir();
    const elsewhere = tempDir();
    const out = join(dir, 'out');
    mkdirSync(out);
    const input = Array.from({ length: 3000 }, (_, i) => `line ${i}\n`).join('');
    const exec = ['--pipe', '--block', '4K', '--exec', 'cat > "$OUT"/{#}'];
    const first = await runCli(['run', '-', '--db', db, ...exec, '--max-runtime', '1ms', '-j', '1'], { cwd: dir, env: { OUT: out }, input });
    expect([0, 3], first.stderr).toContain(first.code);
    const w = await runCli(['worker', '--db', db, '-j', '2'], { cwd: elsewhere, env: { OUT: out } });
    expect(w.code, w.stderr).toBe(0);
    const blocks = readdirSync(out).sort((a, b) => Number(a) - Number(b));
    expect(blocks.length).toBeGreaterThan(5);
    expect(blocks.length).toBeLessThan(20); // 28,890 bytes in blocks of about 4 KiB, not a task per line
    expect(blocks.map((f) => readFileSync(join(out, f), 'utf8')).join('')).toBe(input);
  });

  it('a grown log gets new chunks only, read through --pipe; a changed one is exit 2', async () => {
    const { db } = freshDb();
    const dir = tempDir();
    const seen = join(dir, 'seen');
    const log = join(dir, 'app.log');
    const run = () => runCli(['run', 'app.log', '--db', db, '--lines', '3', '--pipe', '--exec', 'cat >> "$SEEN"', '-j', '1'], { cwd: dir, env: { SEEN: seen } });
    writeFileSync(log, 'l1\nl2\nl3\nl4\n');
    expect((await run()).code).toBe(0);
    appendFileSync(log, 'l5\nl6\n');
    const grown = await run();
    expect(grown.code, grown.stderr).toBe(0);
    expect(grown.stderr).toMatch(/3 tasks \(1 new\)/);
    expect(readFileSync(seen, 'utf8')).toBe('l1\nl2\nl3\nl4\nl5\nl6\n');
    writeFileSync(log, 'X1\nl2\nl3\nl4\nl5\nl6\n');
    const changed = await run();
    expect(changed.code).toBe(2);
    expect(changed.stderr).toMatch(/changed since batch .*--batch NEW/);
  });
});
