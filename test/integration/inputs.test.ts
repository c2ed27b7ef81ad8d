import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler, runCli, tempDir } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn, query } from '../helpers/store.js';

const HOSTILE = [
  'with space.log',
  "quote'single.log",
  'quote"double.log',
  '$(touch pwned).log',
  '`touch pwned2`.log',
  'semi;touch pwned3.log',
  'pipe|touch pwned4.log',
  'new\nline.log',
  'tab\there.log',
  '-leading-dash.log',
  'ünïcødé-日本.log',
  'emoji-🎉.log',
  'caf\u00e9-nfc.log',
  'cafe\u0301-nfd.log',
  `esc\u001b[31m.log`,
  `${'x'.repeat(251)}.log`,
];

describe('hostile file names', () => {
  it('are exact keys and exact single arguments; nothing is injected', async () => {
    const dir = tempDir();
    const src = join(dir, 'src');
    mkdirSync(src);
    for (const name of HOSTILE) writeFileSync(join(src, name), name);
    const out = join(dir, 'args.bin');
    // printf '%s\0' writes each argument NUL-terminated: one entry per task proves one argument.
    const r = await runCli(['run', 'src', '--exec', `printf '%s\\0' {key} >> '${out}'; cmp -s {} {}`, '-j', '2'], { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    const args = readFileSync(out, 'utf8').split('\0').filter(Boolean);
    expect(args.sort()).toEqual([...HOSTILE].sort());
    const keys = query<{ task_key: string }>(dbPathIn(dir), 'SELECT task_key FROM tasks').map((t) => t.task_key);
    expect(keys.sort()).toEqual([...HOSTILE].sort());
    for (const f of ['pwned', 'pwned2', 'pwned3.log', 'pwned4.log']) {
      expect(existsSync(join(dir, f))).toBe(false);
      expect(existsSync(join(src, f))).toBe(false);
    }
    const shown = await runCli(['show', '$(touch pwned).log', '--json'], { cwd: dir });
    expect(JSON.parse(shown.stdout).payload.path).toBe(join(src, '$(touch pwned).log'));
  });
});

describe('file sources', () => {
  it('a 50 MB file splits into line-aligned chunks that tile it exactly', async () => {
    const dir = tempDir();
    const file = join(dir, 'big.txt');
    let seed = 42;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const parts: string[] = [];
    let size = 0;
    while (size < 50 * 1024 * 1024) {
      const lineText = 'y'.repeat(Math.floor(rand() * 300)) + (rand() < 0.1 ? '\r\n' : '\n');
      parts.push(lineText);
      size += lineText.length;
    }
    parts.push('no final newline');
    const content = Buffer.from(parts.join(''));
    writeFileSync(file, content);
    // A finished file: its last line has no newline and the file has been still for an hour, so it is a line.
    utimesSync(file, new Date(Date.now() - 3600_000), new Date(Date.now() - 3600_000));
    const outDir = join(dir, 'out');
    mkdirSync(outDir);
    const r = await runCli(['run', 'big.txt', '--handler', handler('copy-range'), '--chunk-size', '4MiB', '-j', '2'], {
      cwd: dir,
      env: { OUT_DIR: outDir },
    });
    expect(r.code, r.stderr).toBe(0);
    const tasks = query<{ task_key: string; payload: string }>(dbPathIn(dir), 'SELECT task_key, payload FROM tasks ORDER BY id');
    expect(tasks.length).toBe(13);
    let expectedStart = 0;
    tasks.forEach((t, i) => {
      expect(t.task_key).toBe(`big.txt:${String(i).padStart(5, '0')}`);
      const { start, end } = JSON.parse(t.payload);
      expect(start).toBe(expectedStart);
      if (start > 0) expect(content[start - 1]).toBe(0x0a);
      expectedStart = end;
    });
    expect(expectedStart).toBe(content.length);
    const rebuilt = Buffer.concat(tasks.map((t) => readFileSync(join(outDir, encodeURIComponent(t.task_key)))));
    const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
    expect(sha(rebuilt)).toBe(sha(content));
  });

  it('--lines N makes one task per N lines', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'l.txt'), Array.from({ length: 25 }, (_, i) => `row ${i}\n`).join(''));
    const r = await runCli(['run', 'l.txt', '--exec', 'true', '--lines', '10'], { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    const tasks = query<{ payload: string }>(dbPathIn(dir), 'SELECT payload FROM tasks ORDER BY id').map((t) => JSON.parse(t.payload));
    expect(tasks.map((t) => [t.start, t.end])).toEqual([
      [0, 60],
      [60, 130],
      [130, 165],
    ]);
  });
});

describe('run without a terminal (cron, env -i)', () => {
  it('prints no escape codes and no carriage returns, a summary, exit 0', async () => {
    const p = projectWithFiles(5);
    const r = await runCli(['run', 'src', '--exec', 'echo {key}'], {
      cwd: p.dir,
      cleanEnv: true,
      env: { PATH: '/usr/local/bin:/usr/bin:/bin' },
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout + r.stderr).not.toMatch(/[\u001b\r]/);
    expect(r.stderr).toMatch(/done: 5 succeeded, 0 failed of 5/);
    expect(statSync(dbPathIn(p.dir)).mode & 0o777).toBe(0o600);
  });

  it('--quiet prints nothing on success and the failures on failure', async () => {
    const p = projectWithFiles(2);
    const ok = await runCli(['run', 'src', '--exec', 'true', '--quiet'], { cwd: p.dir });
    expect(ok.code).toBe(0);
    expect(ok.stdout + ok.stderr).toBe('');
    const q = projectWithFiles(2);
    const bad = await runCli(['run', 'src', '--exec', 'echo broken >&2; exit 9', '--quiet', '--retries', '0'], { cwd: q.dir });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/FAILED f000\.log after 1 attempt: exit code 9: broken/);
  });

  it('prints a timestamped progress line every --progress-interval', async () => {
    const p = projectWithFiles(6);
    const r = await runCli(['run', 'src', '--exec', 'sleep 0.3', '-j', '1', '--progress-interval', '500ms'], { cwd: p.dir });
    expect(r.code).toBe(0);
    const lines = r.stderr.split('\n').filter((l) => /^\d{4}-\d\d-\d\dT.*\d+\/6 done/.test(l));
    expect(lines.length).toBeGreaterThanOrEqual(2);
  });

  it('--json prints NDJSON events on stdout', async () => {
    const p = projectWithFiles(3);
    const r = await runCli(['run', 'src', '--exec', 'true', '--json'], { cwd: p.dir });
    expect(r.code).toBe(0);
    const events = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(events[0]).toMatchObject({ event: 'start', total: 3 });
    expect(events.filter((e) => e.event === 'attempt')).toHaveLength(3);
    expect(events.at(-1)).toMatchObject({ event: 'end', exitCode: 0, succeeded: 3 });
    expect(r.stderr).toBe('');
  });
});

describe('output capture', () => {
  it('keeps a 4 KiB tail in the store and the full output in a log file, only when there is output', async () => {
    const p = projectWithFiles(2);
    const r = await runCli(['run', 'src', '--exec', 'case {key} in f000.log) seq 1 20000;; esac'], { cwd: p.dir });
    expect(r.code).toBe(0);
    const rows = query<{ task_key: string; output_tail: string | null; log_path: string | null }>(
      dbPathIn(p.dir),
      'SELECT t.task_key, a.output_tail, a.log_path FROM attempts a JOIN tasks t ON t.id = a.task_id ORDER BY t.task_key',
    );
    expect(Buffer.byteLength(rows[0]!.output_tail!)).toBeLessThanOrEqual(4096);
    expect(rows[0]!.output_tail!.endsWith('19999\n20000\n')).toBe(true);
    expect(rows[1]).toMatchObject({ output_tail: null, log_path: null });
    const logs = await runCli(['logs', 'f000.log'], { cwd: p.dir });
    expect(logs.stdout.split('\n').filter(Boolean)).toHaveLength(20000);
    expect(readdirSync(join(p.dir, '.splitdance', 'logs')).length).toBe(1);
  });

  it('a handler printing 50 MB on stdout and stderr neither blocks nor bloats the store', async () => {
    const p = projectWithFiles(1);
    const r = await runCli(['run', 'src', '--handler', handler('flood')], { cwd: p.dir, env: { FLOOD_MB: '25' } });
    expect(r.code, r.stderr).toBe(0);
    const [row] = query<{ output_tail: string; log_path: string }>(dbPathIn(p.dir), 'SELECT output_tail, log_path FROM attempts');
    expect(Buffer.byteLength(row!.output_tail)).toBeLessThanOrEqual(4096);
    expect(statSync(row!.log_path).size).toBe(50 * 1024 * 1024);
    expect(statSync(dbPathIn(p.dir)).size).toBeLessThan(1024 * 1024);
  });
});
