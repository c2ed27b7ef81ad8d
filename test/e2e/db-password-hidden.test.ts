import { describe, expect, it } from 'vitest';
import { handler, runCli } from '../helpers/cli.js';
import { mainIn } from '../helpers/in-process-cli.js';
import { PG_URL, pgSchemas } from '../helpers/pg.js';
import { missing } from '../helpers/services.js';
import { projectWithFiles } from '../helpers/project.js';

// The trust model (test/store/trust-model.test.ts): a --db password stays out of the process
// list, which a handler reads through its ancestors' command lines: the CLI's own among them.

describe.skipIf(missing('postgres'))('a --db password out of the process list and of handlers', () => {
  const schema = pgSchemas('sd_trust');
  it('a handler sees no password in its ancestors\' command lines, nor SPLITDANCE_DB holding one', async () => {
    const password = new URL(PG_URL!).password;
    expect(password.length).toBeGreaterThan(0);
    const p = projectWithFiles(2);
    const { db } = schema();
    const viaFlag = await runCli(['run', 'src', '--batch', 'flag', '--db', db, '--handler', handler('ancestry'), '-j', '1'], { cwd: p.dir });
    expect(viaFlag.code, viaFlag.stderr).toBe(0);
    const viaEnv = await runCli(['run', 'src', '--batch', 'env', '--handler', handler('ancestry'), '-j', '1'], { cwd: p.dir, env: { SPLITDANCE_DB: db } });
    expect(viaEnv.code, viaEnv.stderr).toBe(0);
    for (const batch of ['flag', 'env']) {
      const shown = JSON.parse((await mainIn(p.dir, ['show', 'f000.log', '--json', '--db', db, '--batch', batch])).stdout);
      const seen = shown.result as { splitdanceDb: string | null; cmdlines: string[] };
      expect(seen.splitdanceDb).toBeNull();
      const coordinator = seen.cmdlines.find((c) => c.includes('splitdance.js'));
      expect(coordinator, seen.cmdlines.join('\n')).toBeDefined();
      if (batch === 'flag') expect(coordinator).toMatch(/--db postgres:\/\/[^ ]*:\*\*\*@/);
      for (const c of seen.cmdlines) expect(c).not.toContain(`:${password}@`);
    }
  });
});

