import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';

// No silent no-ops (SPEC §6): a template that runs but cannot be what was meant is warned about
// once, at the start, with the fix.

const warnings = (stderr: string) => stderr.split('\n').filter((l) => l.startsWith('warning: '));

describe('--exec templates that do not say which task', () => {
  it('a template without a placeholder that does not read $SPLITDANCE_PATH: one warning naming {}', async () => {
    const p = projectWithFiles(5);
    const r = await runCli(['run', 'src', '--exec', 'wc -l', '-j', '2'], { cwd: p.dir });
    expect(r.code).toBe(0);
    const w = warnings(r.stderr);
    expect(w, r.stderr).toHaveLength(1);
    expect(w[0]).toContain('"wc -l" has no placeholder and does not read $SPLITDANCE_PATH');
    expect(w[0]).toContain('add {} where the file goes');
    for (const fine of ['wc -l {}', 'wc -l "$SPLITDANCE_PATH"', 'echo {rel}']) {
      const ok = await runCli(['run', 'src', '--exec', fine, '--batch', `b${fine.length}`], { cwd: p.dir });
      expect(ok.code, ok.stderr).toBe(0);
      expect(warnings(ok.stderr), fine).toEqual([]);
    }
  });

  it('a chunked file whose template uses the path but not {start}/{end}: a warning whose example counts right', async () => {
    const p = projectWithFiles(0);
    const lines = Array.from({ length: 20_000 }, (_, i) => `line ${i}`).join('\n') + '\n';
    writeFileSync(join(p.dir, 'big.txt'), lines);
    const r = await runCli(['run', 'big.txt', '--chunk-size', '20k', '--exec', 'wc -l {}', '--print'], { cwd: p.dir });
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
    const fixed = await runCli(['run', 'big.txt', '--chunk-size', '20k', '--exec', template, '--print', '--batch', 'fixed'], { cwd: p.dir });
    expect(fixed.code, fixed.stderr).toBe(0);
    expect(warnings(fixed.stderr)).toEqual([]);
    expect(fixed.stdout.trim().split('\n').reduce((n, c) => n + Number(c.trim()), 0)).toBe(20_000);
  });
});
