import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/** docs/architecture.md answers "where is …" with paths: each must exist, or the answer is wrong. */
const ROOT = join(import.meta.dirname, '../..');

describe('the architecture tree', () => {
  it('the README\'s layout names only files and folders that exist', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const section = /## Layout\n[\s\S]*?```\n([\s\S]*?)```/.exec(readme)![1]!;
    const paths = section.split('\n').map((l) => /^(\S+)/.exec(l)?.[1]).filter((p): p is string => !!p);
    // The five questions of the layout each have their one file here.
    expect(paths).toEqual(expect.arrayContaining(['src/run/start-run.ts', 'src/coordinator/claim.ts', 'src/coordinator/settlement.ts', 'src/template/template-quoting.ts']));
    for (const p of paths) expect(existsSync(join(ROOT, p)), p).toBe(true);
  });

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
