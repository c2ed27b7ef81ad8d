import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { templateWarnings } from '../../src/job/template-warnings.js';
import { tempDir } from '../helpers/cli.js';
import { mainIn } from '../helpers/in-process-cli.js';

// Audit 4, item 20: a template whose only placeholders are a record's fields or a stage's
// inputs names its task, so it is not warned to have "no placeholder".
describe('templateWarnings', () => {
  it('warns about a template with no placeholder at all', () => {
    expect(templateWarnings('wc -l', 'items', '--exec')).toEqual([expect.stringContaining('has no placeholder')]);
  });

  it.each(['notify --to {item.email}', 'gzip -c {inputs.fetch.out}', 'echo {1}', 'echo {item}'])('says nothing about %s', (template) => {
    expect(templateWarnings(template, 'items', '--exec')).toEqual([]);
  });
});

// Issue 41: a file that is one chunk was warned that "each chunk's command reads the whole file".
describe('a file source whose command is given the path', () => {
  const lines = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}`).join('\n') + '\n';

  it('is not warned when the file is one chunk (bytes or --lines), and is when it is two', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'small.log'), lines(100));
    const bytes = await mainIn(dir, ['run', 'small.log', '--exec', 'wc -l {}']);
    expect([bytes.code, bytes.stderr]).toEqual([0, expect.not.stringContaining('warning')]);
    const byLines = await mainIn(dir, ['run', 'small.log', '--batch', 'by-lines', '--lines', '100', '--exec', 'wc -l {}']);
    expect([byLines.code, byLines.stderr]).toEqual([0, expect.not.stringContaining('warning')]);
    // Two chunks or more: each command does read the whole file.
    const r = await mainIn(dir, ['run', 'small.log', '--batch', 'halves', '--lines', '50', '--exec', 'wc -l {}']);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("so each chunk's command reads the whole file");
  }, 60_000);
});
