import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/** docs/architecture.md answers "where is …" with paths: each must exist, or the answer is wrong. */
const ROOT = join(import.meta.dirname, '../..');

describe('the architecture tree', () => {
  it('names only files and folders that exist', () => {
    const page = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
    const tree = /```\n([\s\S]*?)```/.exec(page)![1]!;
    const paths = tree
      .split('\n')
      .map((l) => /^(\S+)/.exec(l)?.[1])
      .filter((p): p is string => !!p);
    expect(paths.length).toBeGreaterThan(15);
    for (const p of paths) {
      const path = p.replace('<command>', 'run').replace('*', 'sqlite');
      expect(existsSync(join(ROOT, path)), p).toBe(true);
    }
  });
});
