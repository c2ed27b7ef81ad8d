import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { handler, tempDir } from '../helpers/cli.js';
import { mainIn, setProcessEnv } from '../helpers/in-process-cli.js';
import { PG_URL } from '../helpers/pg.js';
import { writeFiles } from '../helpers/project.js';
import { countBy } from '../helpers/store.js';

/**
 * Stages (SPEC §8) from the built CLI, on both stores: transcode → (thumbnail, package) →
 * manifest for 12 videos. Every stage's attempts are logged by fixtures/handlers/stage.mjs
 * (manifest is an exec stage), so the order and the inputs are checked from outside.
 */
const schemas: string[] = [];

/** The stage handler reads its log and faults from the environment, in the workers: set here, put back after each test. */
let restoreEnv = () => {};
afterEach(() => restoreEnv());

afterAll(async () => {
  if (!PG_URL || schemas.length === 0) return;
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  for (const s of schemas) await client.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
  await client.end();
});

interface Entry {
  stage: string;
  item: string;
  start: number;
  end: number;
  inputs: Record<string, { out: string; stage: string }>;
  failed: boolean;
}

const ITEMS = Array.from({ length: 12 }, (_, i) => `video${String(i).padStart(2, '0')}.mp4`);

function pipelineProject(stages?: unknown[]): { dir: string; log: string; manifest: string } {
  const dir = tempDir('sd-stages-');
  stages ??= defaultStages();
  writeFiles(join(dir, 'videos'), Object.fromEntries(ITEMS.map((v) => [v, `frames of ${v}\n`])));
  writeFileSync(join(dir, 'pipeline.json'), JSON.stringify({ source: 'videos', retries: 1, backoff: '10ms', stages }, null, 2));
  return { dir, log: join(dir, 'stages.ndjson'), manifest: join(dir, 'manifest.txt') };
}

/** The manifest stage appends to manifest.txt in the folder the run is started in (the project). */
function defaultStages(): unknown[] {
  const stage = handler('stage');
  return [
    { name: 'transcode', handler: stage, retries: 0 },
    { name: 'thumbnail', handler: stage, needs: ['transcode'] },
    { name: 'package', handler: stage, needs: ['transcode'] },
    { name: 'manifest', needs: ['thumbnail', 'package'], exec: 'echo {inputs.thumbnail.out} {inputs.package.out} >> manifest.txt' },
  ];
}

const entries = (log: string): Entry[] =>
  existsSync(log)
    ? readFileSync(log, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Entry)
    : [];

interface TaskJson {
  key: string;
  stage: string | null;
  item: string | null;
  status: string;
  attempts: number;
  lastError: string | null;
}

const backends: [string, () => string[]][] = [
  ['SQLite', () => []],
  [
    'PostgreSQL',
    () => {
      const schema = `stages_${process.pid}_${schemas.length}_${Date.now() % 100000}`;
      schemas.push(schema);
      return ['--db', `${PG_URL}${PG_URL!.includes('?') ? '&' : '?'}schema=${schema}`];
    },
  ],
];

describe.each(backends)('stages on %s', (name, dbArgs) => {
  it.skipIf(name === 'PostgreSQL' && !PG_URL)(
    'runs each stage after its needs per item, hands results downstream, cancels the dependents of a failed item; retry-failed finishes it',
    async () => {
      const p = pipelineProject();
      const db = dbArgs();
      const env = { STAGE_LOG: p.log, SLEEP_MS: '15', FAIL_STAGE: 'transcode', FAIL_ITEMS: '^video0[37]' };
      restoreEnv = setProcessEnv(env);
      const r = await mainIn(p.dir, ['run', '--job', 'pipeline.json', '-j', '4', ...db]);
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toMatch(/finished with failures: 40 succeeded, 2 failed, 6 cancelled of 48/);

      const log = entries(p.log);
      const ended = new Map(log.filter((e) => e.stage === 'transcode').map((e) => [e.item, e.end]));
      for (const e of log.filter((e) => e.stage === 'thumbnail' || e.stage === 'package')) {
        expect(e.start, `${e.stage}/${e.item} started before its transcode ended`).toBeGreaterThanOrEqual(ended.get(e.item)!);
        expect(e.inputs).toEqual({ transcode: { out: `${e.item}.transcode`, stage: 'transcode' } });
      }
      // The exec stage got both upstream results through {inputs.STAGE.FIELD}, once per good item.
      const manifest = readFileSync(p.manifest, 'utf8').trim().split('\n').sort();
      const good = ITEMS.filter((v) => !/^video0[37]/.test(v));
      expect(manifest).toEqual(good.map((v) => `${v}.thumbnail ${v}.package`));

      const tasks = JSON.parse((await mainIn(p.dir, ['tasks', '--json', ...db])).stdout) as TaskJson[];
      expect(tasks).toHaveLength(48);
      const cancelled = tasks.filter((t) => t.status === 'CANCELLED');
      const expected = ['thumbnail', 'package', 'manifest'].flatMap((s) => ['video03.mp4', 'video07.mp4'].map((v) => `${s}/${v}`));
      expect(cancelled.map((t) => t.key).sort()).toEqual(expected.sort());
      for (const t of cancelled) {
        expect(t.attempts).toBe(0);
        expect(t.lastError).toBe(t.stage === 'manifest' ? 'needs thumbnail: CANCELLED' : 'needs transcode: FAILED');
      }
      expect(tasks.find((t) => t.key === 'package/video05.mp4')).toMatchObject({ stage: 'package', item: 'video05.mp4', status: 'SUCCESS' });
      expect(log.filter((e) => /^video0[37]/.test(e.item)).map((e) => e.stage)).toEqual(['transcode', 'transcode']); // nothing downstream ran

      const status = JSON.parse((await mainIn(p.dir, ['status', '--json', ...db])).stdout);
      expect(status).toMatchObject({ total: 48, succeeded: 40, failed: 2, cancelled: 6, done: true });
      expect(status.stages.map((s: { stage: string }) => s.stage)).toEqual(['transcode', 'thumbnail', 'package', 'manifest']);
      expect(status.stages[0]).toMatchObject({ stage: 'transcode', total: 12, succeeded: 10, failed: 2, cancelled: 0 });
      expect(status.stages[3]).toMatchObject({ stage: 'manifest', total: 12, succeeded: 10, cancelled: 2 });
      const human = await mainIn(p.dir, ['status', ...db]);
      expect(human.stdout).toMatch(/^ {2}thumbnail +12\/12 done: 10 succeeded, 0 failed, 2 cancelled/m);
      const show = await mainIn(p.dir, ['show', 'manifest/video03.mp4', ...db]);
      expect(show.stdout).toMatch(/stage manifest of item video03\.mp4; needs thumbnail, package/);
      expect(show.stdout).toMatch(/last error: needs thumbnail: CANCELLED/);
      const report = await mainIn(p.dir, ['report', '--html', 'report.html', ...db]);
      expect(report.code, report.stderr).toBe(0);
      const html = readFileSync(join(p.dir, 'report.html'), 'utf8');
      expect(html).toMatch(/<h2>Stages<\/h2>/);
      expect(html).toContain('<tr><td><code>thumbnail</code></td><td>12</td><td>10</td><td>0</td><td>2</td><td>0</td></tr>');

      // Fix the input, retry the failed stage: its dependents come back and run; nothing else runs again.
      const retry = await mainIn(p.dir, ['retry-failed', '--key', 'transcode/*', ...db]);
      expect(retry.stderr).toMatch(/2 failed tasks reset to PENDING/);
      setProcessEnv({ FAIL_ITEMS: '$^' }); // restoreEnv still puts back what was there before the test
      const again = await mainIn(p.dir, ['run', '--job', 'pipeline.json', '-j', '4', ...db]);
      expect(again.code, again.stderr).toBe(0);
      const runs = countBy(entries(p.log), (e) => `${e.stage}/${e.item}`);
      for (const [key, n] of runs) expect(n, key).toBe(/^transcode\/video0[37]/.test(key) ? 2 : 1);
      expect(runs.size).toBe(36); // 3 module stages × 12 items
      expect(readFileSync(p.manifest, 'utf8').trim().split('\n')).toHaveLength(12);
    },
    60_000,
  );
});

describe('stages: bad pipelines are usage errors (exit 2, nothing written)', () => {
  const stage = handler('stage');
  const cases: [string, unknown, RegExp][] = [
    ['an unknown need', [{ name: 'a', handler: stage }, { name: 'b', handler: stage, needs: ['aa'] }], /"b" needs "aa", which is not a stage \(stages: a, b\)/],
    [
      'a cycle',
      [{ name: 'a', handler: stage, needs: ['c'] }, { name: 'b', handler: stage, needs: ['a'] }, { name: 'c', handler: stage, needs: ['b'] }],
      /the needs form a cycle \(a → c → b → a\)/,
    ],
    ['a stage needing itself', [{ name: 'a', handler: stage, needs: ['a'] }], /"a" needs itself/],
    ['a duplicate name', [{ name: 'a', handler: stage }, { name: 'a', exec: 'true' }], /the name "a" is used twice/],
    ['a stage with two handlers', [{ name: 'a', handler: stage, exec: 'true' }], /exactly one of "exec" or "handler"/],
    ['a stage with no handler', [{ name: 'a' }], /exactly one of "exec" or "handler"/],
    ['a name with a slash', [{ name: 'a/b', exec: 'true' }], /field "stages\.0\.name": expected a stage name/],
    ['a misspelt stage field', [{ name: 'a', exec: 'true', need: [] }], /unknown field "need" \(did you mean "needs"\?\)/],
    [
      'an input from a stage it does not need',
      [{ name: 'a', exec: 'true' }, { name: 'b', exec: 'true' }, { name: 'c', needs: ['a'], exec: 'echo {inputs.b.out}' }],
      /\{inputs\.b\.out\} reads stage "b", which this stage does not need \(needs: a\)/,
    ],
  ];
  it.each(cases)('%s', async (_what, stages, message) => {
    const p = pipelineProject(stages as unknown[]);
    const r = await mainIn(p.dir, ['run', '--job', 'pipeline.json']);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
    expect(existsSync(join(p.dir, '.splitdance'))).toBe(false);
  });

  it('a need named twice counts once (the run ends, it does not wait forever)', { timeout: 20_000 }, async () => {
    const p = pipelineProject([{ name: 'a', exec: 'true' }, { name: 'b', exec: 'true', needs: ['a', 'a'] }]);
    const r = await mainIn(p.dir, ['run', '--job', 'pipeline.json', '--no-wait']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/done: 24 succeeded, 0 failed of 24/);
  });

  it('a top-level handler beside stages, and --exec on a batch with stages, are refused', async () => {
    const p = pipelineProject([{ name: 'a', exec: 'true' }]);
    const job = JSON.parse(readFileSync(join(p.dir, 'pipeline.json'), 'utf8'));
    writeFileSync(join(p.dir, 'both.json'), JSON.stringify({ ...job, exec: 'true' }));
    const both = await mainIn(p.dir, ['run', '--job', 'both.json']);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/with "stages", each stage has its own "exec" or "handler"; remove the top-level one/);

    expect((await mainIn(p.dir, ['run', '--job', 'pipeline.json'])).code).toBe(0);
    const flag = await mainIn(p.dir, ['run', 'videos', '--exec', 'true']);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toMatch(/has stages, each with its own handler; --exec\/--handler cannot replace them/);
    // The same source without stages is another pipeline: refused, not silently re-keyed.
    writeFileSync(join(p.dir, 'other.json'), JSON.stringify({ ...job, stages: [{ name: 'b', exec: 'true' }] }));
    const other = await mainIn(p.dir, ['run', '--job', 'other.json']);
    expect(other.code).toBe(2);
    expect(other.stderr).toMatch(/was created with stages a, not stages b; task keys follow the stages/);
  });
});
