import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler, tempDir } from '../helpers/cli.js';
import { jsonOf, mainIn, mainInProcessEnv } from '../helpers/in-process-cli.js';
import { tasksIn } from '../helpers/read-store.js';
import { dbPathIn } from '../helpers/store.js';

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
    const r = await mainIn(dir, ['run', 'src', '--exec', `printf '%s\\0' {key} >> '${out}'; cmp -s {} {}`, '-j', '2']);
    expect(r.code, r.stderr).toBe(0);
    const args = readFileSync(out, 'utf8').split('\0').filter(Boolean);
    expect(args.sort()).toEqual([...HOSTILE].sort());
    const keys = (await jsonOf<{ key: string }[]>(dir, ['tasks'])).map((t) => t.key);
    expect(keys.sort()).toEqual([...HOSTILE].sort());
    for (const f of ['pwned', 'pwned2', 'pwned3.log', 'pwned4.log']) {
      expect(existsSync(join(dir, f))).toBe(false);
      expect(existsSync(join(src, f))).toBe(false);
    }
    const shown = await mainIn(dir, ['show', '$(touch pwned).log', '--json']);
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
    const r = await mainInProcessEnv(dir, ['run', 'big.txt', '--handler', handler('copy-range'), '--chunk-size', '4MiB', '-j', '2'], { OUT_DIR: outDir });
    expect(r.code, r.stderr).toBe(0);
    const tasks = (await tasksIn(dbPathIn(dir))).map((t) => ({ task_key: t.key, payload: t.payload }));
    expect(tasks.length).toBe(13);
    let expectedStart = 0;
    tasks.forEach((t, i) => {
      expect(t.task_key).toBe(`big.txt:${String(i).padStart(5, '0')}`);
      const { start, end } = t.payload as Required<typeof t.payload>;
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
    const r = await mainIn(dir, ['run', 'l.txt', '--exec', 'true', '--lines', '10']);
    expect(r.code, r.stderr).toBe(0);
    const tasks = (await tasksIn(dbPathIn(dir))).map((t) => t.payload);
    expect(tasks.map((t) => [t.start, t.end])).toEqual([
      [0, 60],
      [60, 130],
      [130, 165],
    ]);
  });
});
