import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { namesSplitdance } from '../../src/worker/self-import-scan.js';
import { tempDir } from '../helpers/cli.js';

/** Writes files into a fresh folder; returns the path of the first. */
function handler(files: Record<string, string>): string {
  const dir = tempDir('sd-scan-');
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return join(dir, Object.keys(files)[0]!);
}

describe('whether a handler names splitdance (the resolve hook is registered only then)', () => {
  it.each<[string, Record<string, string>]>([
    ['an import', { 'h.mjs': `import { PermanentError } from 'splitdance';\nexport default async () => 1;\n` }],
    ['a require', { 'h.cjs': `const { PermanentError } = require("splitdance");\nmodule.exports = async () => 1;\n` }],
    ['a dynamic import inside the task', { 'h.mjs': 'export default async () => { const m = await import(`splitdance`); return m; };\n' }],
    ['a path in the package', { 'h.mjs': `import x from 'splitdance/package.json' with { type: 'json' };\nexport default async () => x;\n` }],
    ['a helper it imports, two levels down', { 'h.mjs': `import { e } from './lib/a.mjs';\nexport default async () => e;\n`, 'lib/a.mjs': `export { e } from '../b.mjs';\n`, 'b.mjs': `export { PermanentError as e } from 'splitdance';\n` }],
    ['a helper required without its extension', { 'h.cjs': `const e = require('./errs');\nmodule.exports = async () => e;\n`, 'errs.js': `module.exports = require('splitdance').PermanentError;\n` }],
    ['a TypeScript helper imported as .js', { 'h.ts': `import { e } from './errs.js';\nexport default async (): Promise<unknown> => e;\n`, 'errs.ts': `export { PermanentError as e } from 'splitdance';\n` }],
    ['a TypeScript helper imported without its extension', { 'h.ts': `import { e } from './errs';\nexport default async (): Promise<unknown> => e;\n`, 'errs.ts': `export { PermanentError as e } from 'splitdance';\n` }],
    ['a subpath import (package.json "imports"), which is not followed', { 'h.mjs': `import { e } from '#errs';\nexport default async () => e;\n`, 'package.json': '{ "imports": { "#errs": "./errs.mjs" } }\n' }],
    ['a folder it imports (its index)', { 'h.cjs': `module.exports = require('./lib');\n`, 'lib/index.js': `require('splitdance');\nmodule.exports = async () => 1;\n` }],
  ])('%s: yes', (_, files) => {
    expect(namesSplitdance(handler(files))).toBe(true);
  });

  it.each<[string, Record<string, string>]>([
    ['no import of it', { 'h.mjs': `import { readFile } from 'node:fs/promises';\nexport default async (t) => readFile(t.path);\n` }],
    ['helpers that import each other, none naming it', { 'h.mjs': `import './a.mjs';\nexport default async () => 1;\n`, 'a.mjs': `import './b.mjs';\n`, 'b.mjs': `import './a.mjs';\n` }],
    ['a word that only contains the name', { 'h.mjs': `const s = 'splitdance-extra';\nconst t = "my splitdance run";\nexport default async () => s + t;\n` }],
    ['a relative path to nothing', { 'h.mjs': `const p = './missing/file.txt';\nexport default async () => p;\n` }],
  ])('%s: no', (_, files) => {
    expect(namesSplitdance(handler(files))).toBe(false);
  });

  // Each quoted relative path costs a few lookups: a file full of them (a manifest of data paths)
  // must not hold a worker's start-up for long. Past the bound the hook is registered anyway.
  it('a file naming 100,000 different relative paths (1.5 MB): gives up past its bound and says yes', () => {
    const paths = Array.from({ length: 100_000 }, (_, i) => `'./data/n${i}'`).join(',\n');
    expect(namesSplitdance(handler({ 'h.mjs': `export const files = [${paths}];\nexport default async () => files.length;\n` }))).toBe(true);
  });

  // Looked up once, it takes about a second with the file's reading; looked up each time (3.3
  // million lookups), it took 34 s. The bound is far from both.
  it('the same relative path named 300,000 times is looked up once: no', () => {
    const paths = Array.from({ length: 300_000 }, () => `'./nope'`).join(',\n');
    expect(namesSplitdance(handler({ 'h.mjs': `export const files = [${paths}];\nexport default async () => files.length;\n` }))).toBe(false);
  }, 15_000);

  it('a helper outside the handler folder is read too (../)', () => {
    const dir = tempDir('sd-scan-');
    mkdirSync(join(dir, 'handlers'));
    writeFileSync(join(dir, 'shared.mjs'), `export { PermanentError } from 'splitdance';\n`);
    writeFileSync(join(dir, 'handlers', 'h.mjs'), `import { PermanentError } from '../shared.mjs';\nexport default async () => PermanentError;\n`);
    expect(namesSplitdance(join(dir, 'handlers', 'h.mjs'))).toBe(true);
  });
});
