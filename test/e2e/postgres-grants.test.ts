import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT, runCli } from '../helpers/cli.js';
import { PG_URL, pgQuery } from '../helpers/pg.js';
import { projectWithFiles } from '../helpers/project.js';

/**
 * The roles and grants docs/trust-model.md lays out for a shared PostgreSQL, run exactly as
 * the page writes them (only the names made unique, and a password put in), then used the
 * way the page says each role can be.
 */
const tag = `sdg_${process.pid}_${Date.now() % 100000}`;
const roles = { owner: `${tag}_owner`, run: `${tag}_run`, read: `${tag}_read` };
const PASSWORD = 'grants-test-pw';

/** The page's ```sql block, with this run's names. */
function documentedGrants(): string {
  const page = readFileSync(join(ROOT, 'docs/trust-model.md'), 'utf8');
  const block = /## A shared PostgreSQL store[^]*?```sql\n([^]*?)```/.exec(page)?.[1];
  if (!block) throw new Error('docs/trust-model.md has no sql block under its PostgreSQL heading');
  return block
    .replace(/\bsplitdance_(owner|run|read)\b/g, (_, r: keyof typeof roles) => roles[r])
    .replace(/\bsplitdance\b/g, tag)
    .replace(/'…'/g, `'${PASSWORD}'`);
}

/** The test server's URL as `role`, on the documented schema. */
function urlAs(role: string): string {
  const url = new URL(PG_URL!);
  url.username = role;
  url.password = PASSWORD;
  url.searchParams.set('schema', tag);
  return url.toString();
}

describe.skipIf(!PG_URL)('the documented PostgreSQL roles and grants (docs/trust-model.md)', () => {
  afterAll(async () => {
    const all = Object.values(roles).join(', ');
    await pgQuery(`DROP SCHEMA IF EXISTS ${tag} CASCADE`);
    await pgQuery(`DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${roles.owner}') THEN DROP OWNED BY ${all}; END IF; END $$`);
    await pgQuery(`DROP ROLE IF EXISTS ${all}`);
  });

  it('the owner creates the store, the run role runs and works it, the read role only looks', async () => {
    await pgQuery(documentedGrants());
    const p = projectWithFiles(3);
    const side = join(p.dir, 'ran');
    const cli = (role: keyof typeof roles, args: string[]) => runCli([...args, '--db', urlAs(roles[role])], { cwd: p.dir });
    const exec = ['--exec', `echo {/} >> ${side}`, '-j', '1'];

    // The run role cannot create the tables: the owner's first run does.
    const early = await cli('run', ['run', 'src', ...exec]);
    expect(early.code, early.stderr).toBe(4);
    expect(early.stderr).toMatch(/owns the schema/);
    expect(existsSync(side)).toBe(false);

    const first = await cli('owner', ['run', 'src', ...exec]);
    expect(first.code, first.stderr).toBe(0);

    // The run role resumes the batch with a new file, and works a batch through retry-failed and worker.
    writeFileSync(join(p.src, 'new.log'), 'new\n');
    const resumed = await cli('run', ['run', 'src']);
    expect(resumed.code, resumed.stderr).toBe(0);
    const flag = join(p.dir, 'flag');
    const failing = await cli('owner', ['run', 'src', '--batch', 'later', '--exec', `test -e ${flag} && echo later {/} >> ${side}`, '--retries', '0']);
    expect(failing.code, failing.stderr).toBe(1);
    writeFileSync(flag, '');
    const reset = await cli('run', ['retry-failed', '--batch', 'later']);
    expect(reset.code, reset.stderr).toBe(0);
    const worker = await cli('run', ['worker', '-j', '1']);
    expect(worker.code, worker.stderr).toBe(0);
    const ran = readFileSync(side, 'utf8').trim().split('\n').sort();
    expect(ran).toEqual([...p.keys, 'new.log', ...[...p.keys, 'new.log'].map((k) => `later ${k}`)].sort());

    // The read role looks at everything…
    for (const args of [['status', '--batch', 'later'], ['tasks'], ['show', 'new.log', '--batch', 'later'], ['batches'], ['metrics']]) {
      const r = await cli('read', args);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
    }
    // …and changes nothing: told it may not, not to get CREATE.
    for (const args of [['pause', '--batch', 'later'], ['run', 'src']]) {
      const r = await cli('read', args);
      expect(r.code, args.join(' ')).toBe(4);
      expect(r.stderr).toMatch(/may not change the store .*this command writes/);
      expect(r.stderr).not.toMatch(/CREATE/);
    }
    const [paused] = await pgQuery<{ paused: boolean }>(`SELECT paused FROM ${tag}.batches WHERE name = 'later'`);
    expect(paused!.paused).toBe(false);
  });
});
