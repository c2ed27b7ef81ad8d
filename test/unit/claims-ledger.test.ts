import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The claims ledger (test/CLAIMS.md) pairs every safety promise of the README (or docs/) with a test that
 * tries to break it. This keeps the pairing true: a promise reworded or dropped from the README,
 * or a test renamed or deleted, fails here until the ledger (or the README) is fixed.
 */
const ROOT = join(import.meta.dirname, '../..');
const squash = (text: string) => text.replace(/\s+/g, ' ').trim();
/** The README and every page of docs/: a promise may live in either (the README links the docs). */
const docs = existsSync(join(ROOT, 'docs'))
  ? readdirSync(join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .sort()
      .map((f) => join('docs', f))
  : [];
const readme = squash(['README.md', ...docs].map((f) => readFileSync(join(ROOT, f), 'utf8')).join('\n'));

/** Table rows as [promise, file, test]; `\'` in a cell stands for `'` (as test titles escape it). */
const rows = readFileSync(join(ROOT, 'test/CLAIMS.md'), 'utf8')
  .split('\n')
  .filter((l) => l.startsWith('| ') && !l.startsWith('| promise') && !l.startsWith('| ---'))
  .map((l) => l.slice(2, -2).split(' | ').map((c) => c.trim()) as [string, string, string]);

describe('the claims ledger', () => {
  it('lists promises', () => {
    expect(rows.length).toBeGreaterThan(40);
  });

  for (const [promise, file, test] of rows) {
    it(`${file}: "${test}" backs "${promise}"`, () => {
      const unquoted = (s: string) => s.replace(/^`([^`]*)`$/, '$1');
      expect(readme, 'the promise is in the README or docs/, word for word').toContain(squash(unquoted(promise)));
      const path = join(ROOT, file);
      expect(existsSync(path), `${file} exists`).toBe(true);
      expect(readFileSync(path, 'utf8'), `${file} holds the test`).toContain(test);
    });
  }
});
