import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mainIn } from '../helpers/in-process-cli.js';
import { PG_URL, pgSchemas } from '../helpers/pg.js';

// `splitdance results` (SPEC §10): every task's key, status, output path, last error and result,
// in input order (the order the source gave), streamed; --jsonl (the default) or --csv.

const newSchema = pgSchemas('sd_results');
const STORES = [{ store: 'SQLite', db: (): string[] => [] }, ...(PG_URL ? [{ store: 'PostgreSQL', db: () => ['--db', newSchema().db] }] : [])];

/** A handler that fails the item `bad` while the file `fix` is absent, and returns the item's length. */
function project() {
  const dir = mkdtempSync(join(tmpdir(), 'sd-results-'));
  writeFileSync(
    join(dir, 'h.mjs'),
    [
      "import { existsSync } from 'node:fs';",
      "export default async (task) => { if (task.item === 'bad' && !existsSync('fix')) throw new Error('bad item, no fix'); return { n: task.item.length }; };",
    ].join('\n'),
  );
  return dir;
}

const ITEMS = ['zeta', 'a,"b"\tc', 'bad', 'mid', 'alpha'];

/** A CSV text (RFC 4180) read back into rows. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else field += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      row.push(field);
      field = '';
    } else if (ch === '\r' && text[i + 1] === '\n') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
      i++;
    } else field += ch;
  }
  return rows;
}

describe.each(STORES)('results on $store', ({ db: dbFor }) => {
  it('in the order the items were given, after a failure, retry-failed --run and a rerun; the result, the error; CSV reads back exact', async () => {
    const dir = project();
    const db = dbFor();
    const first = await mainIn(dir, ['run', '--handler', './h.mjs', '--retries', '0', '--batch', 'list', ...db, ':::', ...ITEMS]);
    expect(first.code).toBe(1);
    const jsonl = async (...extra: string[]) => (await mainIn(dir, ['results', '--batch', 'list', ...extra, ...db])).stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect((await jsonl()).map((r) => [r.key, r.status, r.error, r.result])).toEqual([
      ['zeta', 'SUCCESS', null, { n: 4 }],
      ['a,"b"\tc', 'SUCCESS', null, { n: 7 }],
      ['bad', 'FAILED', 'bad item, no fix', null],
      ['mid', 'SUCCESS', null, { n: 3 }],
      ['alpha', 'SUCCESS', null, { n: 5 }],
    ]);
    expect((await jsonl('--status', 'failed')).map((r) => r.key)).toEqual(['bad']);
    writeFileSync(join(dir, 'fix'), '');
    expect((await mainIn(dir, ['retry-failed', '--run', '--batch', 'list', ...db])).code).toBe(0);
    // A rerun adding an item: after the ones given first.
    expect((await mainIn(dir, ['run', '--handler', './h.mjs', '--retries', '0', '--batch', 'list', ...db, ':::', ...ITEMS, 'omega'])).code).toBe(0);
    const after = await jsonl('--jsonl');
    expect(after.map((r) => r.key)).toEqual([...ITEMS, 'omega']);
    expect(after.every((r) => r.status === 'SUCCESS' && r.error === null)).toBe(true);
    const csv = await mainIn(dir, ['results', '--batch', 'list', '--csv', ...db]);
    expect(parseCsv(csv.stdout)).toEqual([
      ['key', 'status', 'out', 'error', 'result'],
      ...[...ITEMS, 'omega'].map((k) => [k, 'SUCCESS', '', '', JSON.stringify({ n: k.length })]),
    ]);
  });
});

describe('results: declared outputs and flags', () => {
  it('a declared output is its path; --jsonl with --csv, or a bad --status, is exit 2', async () => {
    const dir = project();
    writeFileSync(join(dir, 'x.txt'), 'x\n');
    expect((await mainIn(dir, ['run', '--exec', 'cp {} {out}', '--output', 'out/{/}.copy', '--quiet', ':::', join(dir, 'x.txt')])).code).toBe(0);
    const [row] = (await mainIn(dir, ['results'])).stdout.trim().split('\n').map((l) => JSON.parse(l) as { out: string; status: string });
    expect(row).toMatchObject({ status: 'SUCCESS', out: join(dir, 'out', 'x.txt.copy') });
    const both = await mainIn(dir, ['results', '--jsonl', '--csv']);
    expect([both.code, both.stderr]).toEqual([2, 'splitdance: error: results prints --jsonl (the default) or --csv, not both\n']);
    expect((await mainIn(dir, ['results', '--status', 'done'])).code).toBe(2);
  });
});
