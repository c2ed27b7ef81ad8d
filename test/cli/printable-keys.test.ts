import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/cli.js';
import { mainIn } from '../helpers/in-process-cli.js';

describe('invisible format characters in keys are escaped in human output', () => {
  it('tasks, status and show print keys that differ only by U+200B, U+FEFF, U+2060, U+00AD or a tag character distinctly; --json keeps them exact', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'src'));
    const names = ['ab.log', 'a\u200bb.log', '\ufeffab.log', 'a\u2060b.log', 'a\u00adb.log', 'ab\u{e0041}.log', 'a\u200db.log'];
    for (const n of names) writeFileSync(join(dir, 'src', n), 'x');
    writeFileSync(join(dir, 'src', 'emoji 👩‍💻.log'), 'x');
    const r = await mainIn(dir, ['run', 'src', '--exec', 'false', '--retries', '0']);
    expect(r.code).toBe(1);
    // The human failure lines, one per key: every one reads differently.
    const failed = r.stderr.split('\n').filter((l) => l.startsWith('FAILED '));
    expect(new Set(failed.map((l) => l.split(' ')[1])).size).toBe(names.length + 1);
    const tasks = (await mainIn(dir, ['tasks'])).stdout;
    for (const shown of ['a\\u200bb.log', '\\ufeffab.log', 'a\\u2060b.log', 'a\\xadb.log', 'ab\\u{e0041}.log', 'a\\u200db.log', 'emoji 👩‍💻.log']) {
      expect(tasks).toContain(shown);
    }
    expect(tasks).not.toMatch(/[\u200b\ufeff\u2060\u00ad]|\u{e0041}/u);
    const show = await mainIn(dir, ['show', 'a\u200bb.log']);
    expect(show.stdout + show.stderr).toContain('a\\u200bb.log');
    const json = JSON.parse((await mainIn(dir, ['tasks', '--json'])).stdout) as { key: string }[];
    expect(json.map((t) => t.key).sort()).toEqual([...names, 'emoji 👩‍💻.log'].sort());
  });
});
