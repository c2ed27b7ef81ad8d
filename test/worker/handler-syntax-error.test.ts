import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mainIn } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';

// The location is shown relative to the folder the command was started in (its Io's cwd, where
// its worker processes run), as a person opens it.

describe('a handler module with a syntax error', () => {
  // Each: the module, the line with the error (3), and the column of its first bad character.
  const cases = [
    ['handler.ts', 'export default async (task: unknown) => {\n  const x = 1;\n  const y = = 2;\n  return x + y;\n};\n', 13],
    ['handler.mjs', 'export default async () => {\n  const x = 1;\n  const y = = 2;\n};\n', 13],
    ['handler.js', 'module.exports = async () => {\n  const x = 1;\n  let = ;\n};\n', 9],
  ] as const;
  for (const [name, text, column] of cases) {
    it(`${name}: exit 2 naming ${name}:3:${column} and the message, in lines of at most 80 columns, nothing written`, async () => {
      const p = projectWithFiles(1);
      writeFileSync(join(p.dir, name), text);
      for (const extra of [[], ['--verbose']]) {
        const r = await mainIn(p.dir, ['run', 'src', '--handler', `./${name}`, ...extra]);
        expect(r.code, r.stderr).toBe(2);
        expect(r.stderr).toMatch(new RegExp(`^splitdance: error: handler module .*${name.replace('.', '\\.')} has a syntax error:\\n  ${name.replace('.', '\\.')}:3:${column}: Unexpected (token )?.[=;].\\n`, 'm'));
        const shown = extra.length ? r.stderr.split('\n').slice(0, 2) : r.stderr.split('\n');
        for (const l of shown) expect(l.length, l).toBeLessThanOrEqual(80);
        expect(existsSync(join(p.dir, '.splitdance'))).toBe(false);
      }
    });
  }
});
