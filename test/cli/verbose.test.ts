import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mainIn } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn } from '../helpers/store.js';

const STACK_LINE = /^\s+at .+(:\d+:\d+\)?|\(native\))$/m;

describe('--verbose', () => {
  it('usage and store errors print no stack trace without --verbose', async () => {
    const p = projectWithFiles(2);
    writeFileSync(join(p.dir, 'junk.db'), 'not a database at all\n');
    const cases: [string[], number][] = [
      [['run', 'src', '--exec', 'true', '-j', 'many'], 2],
      [['run', 'src', '--exec', 'true', '--retries', 'lots'], 2],
      [['run', 'src', '--exec', 'true', '--no-such-flag'], 2],
      [['run', 'nowhere', '--exec', 'true'], 2],
      [['status', '--db', 'junk.db'], 4],
      [['tasks', '--db', 'junk.db'], 4],
    ];
    for (const [args, code] of cases) {
      const r = await mainIn(p.dir, args);
      expect(r.code, args.join(' ')).toBe(code);
      expect(r.stderr.trim().length, args.join(' ')).toBeGreaterThan(0);
      expect(r.stderr, args.join(' ')).not.toMatch(STACK_LINE);
      expect(r.stderr, args.join(' ')).not.toContain('unexpected error');
    }
    expect(existsSync(dbPathIn(p.dir))).toBe(false);
  });

  it('a usage error shows its stack with --verbose, still exit 2 with the same message', async () => {
    const p = projectWithFiles(1);
    const plain = await mainIn(p.dir, ['run', 'src', '--exec', 'true', '-j', 'many']);
    const verbose = await mainIn(p.dir, ['run', 'src', '--exec', 'true', '-j', 'many', '--verbose']);
    expect(verbose.code).toBe(2);
    expect(verbose.stderr.split('\n')[0]).toBe(plain.stderr.split('\n')[0]);
    expect(verbose.stderr).toMatch(STACK_LINE);
  });
});
