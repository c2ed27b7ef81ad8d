import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { templateWarnings } from '../../src/job/template-warnings.js';
import { tempDir } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';
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

// No silent no-ops (SPEC §6): a template that runs but cannot be what was meant is warned about
// once, at the start, with the fix.

const warnings = (stderr: string) => stderr.split('\n').filter((l) => l.startsWith('warning: '));

// --print runs its commands with Node's spawn and sets SPLITDANCE_SPAWNER in this process's environment for that: put back after each test.
const spawnerBefore = process.env.SPLITDANCE_SPAWNER;
afterEach(() => {
  if (spawnerBefore === undefined) delete process.env.SPLITDANCE_SPAWNER;
  else process.env.SPLITDANCE_SPAWNER = spawnerBefore;
});

describe('--exec templates that do not say which task', () => {
  it('a template without a placeholder that does not read $SPLITDANCE_PATH: one warning naming {}', async () => {
    const p = projectWithFiles(5);
    const r = await mainIn(p.dir, ['run', 'src', '--exec', 'wc -l', '-j', '2']);
    expect(r.code).toBe(0);
    const w = warnings(r.stderr);
    expect(w, r.stderr).toHaveLength(1);
    expect(w[0]).toContain('"wc -l" has no placeholder and does not read $SPLITDANCE_PATH');
    expect(w[0]).toContain('add {} where the file goes');
    for (const fine of ['wc -l {}', 'wc -l "$SPLITDANCE_PATH"', 'echo {rel}']) {
      const ok = await mainIn(p.dir, ['run', 'src', '--exec', fine, '--batch', `b${fine.length}`]);
      expect(ok.code, ok.stderr).toBe(0);
      expect(warnings(ok.stderr), fine).toEqual([]);
    }
  }, 60_000);

  it('a chunked file whose template uses the path but not {start}/{end}: a warning whose example counts right', async () => {
    const p = projectWithFiles(0);
    const lines = Array.from({ length: 20_000 }, (_, i) => `line ${i}`).join('\n') + '\n';
    writeFileSync(join(p.dir, 'big.txt'), lines);
    const r = await mainIn(p.dir, ['run', 'big.txt', '--chunk-size', '20k', '--exec', 'wc -l {}', '--print']);
    expect(r.code).toBe(0);
    const w = warnings(r.stderr);
    expect(w, r.stderr).toHaveLength(1);
    expect(w[0]).toContain("given the whole file's path for every chunk");
    expect(w[0]).toContain('{start} and {end}');
    // Every chunk counted the whole file: what the warning is about.
    const counts = r.stdout.trim().split('\n');
    expect(counts.length).toBeGreaterThan(3);
    for (const c of counts) expect(c).toMatch(/^20000 /);
    // The example the warning gives, as the shell reads it, counts each line once.
    const example = w[0]!.slice(w[0]!.indexOf('e.g. --exec ') + 'e.g. --exec '.length);
    const template = execFileSync('/bin/sh', ['-c', `printf '%s' ${example}`], { encoding: 'utf8' });
    const fixed = await mainIn(p.dir, ['run', 'big.txt', '--chunk-size', '20k', '--exec', template, '--print', '--batch', 'fixed']);
    expect(fixed.code, fixed.stderr).toBe(0);
    expect(warnings(fixed.stderr)).toEqual([]);
    expect(fixed.stdout.trim().split('\n').reduce((n, c) => n + Number(c.trim()), 0)).toBe(20_000);
  }, 60_000);
});
