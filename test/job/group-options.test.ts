// Many items per command (SPEC §10): -n/-N/-X/-m/--max-items and the job file's fields, from the user's words to the stored handler.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler, tempDir } from '../helpers/cli.js';
import { mainIn, shown } from '../helpers/in-process-cli.js';
import { readStore } from '../helpers/read-store.js';
import { dbPathIn } from '../helpers/store.js';

/** The handler stored with the store's only batch. */
const storedHandler = async (dir: string): Promise<unknown> => readStore(dbPathIn(dir), async (s) => (await s.listBatches())[0]!.job.handler);

describe('the grouping flags are stored in the batch\'s handler, so a worker elsewhere runs the same groups', () => {
  const exec = (group?: object) => ({ kind: 'exec', template: 'echo {}', ...(group ? { group } : {}) });
  // [the grouping flags, the handler stored]
  const cases: [string[], object][] = [
    [['-n', '2'], exec({ mode: 'n', max: 2 })],
    [['--max-args', '2'], exec({ mode: 'n', max: 2 })],
    [['-n', '1'], exec()], // one item per command: no group
    [['-N', '3'], exec({ mode: 'N', max: 3 })],
    [['--max-replace-args', '1'], exec({ mode: 'N', max: 1 })], // {1} is the item, not its first column: still a group
    [['-X'], exec({ mode: 'X', max: 64 })],
    [['--xargs', '--max-items', '5'], exec({ mode: 'X', max: 5 })],
    [['-m'], exec({ mode: 'm', max: 64 })],
    [['-m', '--max-items', '7'], exec({ mode: 'm', max: 7 })],
  ];
  for (const [flags, stored] of cases) {
    it(`run --exec 'echo {}' ${shown(flags)} ::: a b c`, async () => {
      const dir = tempDir();
      const r = await mainIn(dir, ['run', '--exec', 'echo {}', ...flags, ':::', 'a', 'b', 'c']);
      expect(r.code, r.stderr).toBe(0);
      expect(await storedHandler(dir)).toEqual(stored);
    });
  }

  it('--handler with --max-items stores the module\'s maxItems (none without it)', async () => {
    const dir = tempDir();
    expect((await mainIn(dir, ['run', '--handler', handler('ok'), '--max-items', '8', '--batch', 'b', ':::', 'a'])).code).toBe(0);
    expect(await storedHandler(dir)).toEqual({ kind: 'module', path: handler('ok'), maxItems: 8 });
    const other = tempDir();
    expect((await mainIn(other, ['run', '--handler', handler('ok'), ':::', 'a'])).code).toBe(0);
    expect(await storedHandler(other)).toEqual({ kind: 'module', path: handler('ok') });
  });

  it('a changed group is a changed definition: refused for a finished batch, which keeps its handler; the batch name leaves the group out', async () => {
    const dir = tempDir();
    expect((await mainIn(dir, ['run', '--exec', 'echo {}', '-n', '2', ':::', 'a', 'b', 'c'])).code).toBe(0);
    const r = await mainIn(dir, ['run', '--exec', 'echo {}', '-n', '3', ':::', 'a', 'b', 'c']);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/-n 3/);
    expect(await storedHandler(dir)).toEqual(exec({ mode: 'n', max: 2 }));
    const same = await mainIn(dir, ['run', '--exec', 'echo {}', '-n', '2', ':::', 'a', 'b', 'c']);
    expect(same.code, same.stderr).toBe(0);
  });
});

describe('the job file\'s fields, of the job and of a stage, are the flags\' words', () => {
  // [the job file's handler fields, the handler stored]
  const cases: [object, object][] = [
    [{ exec: 'echo {}', maxArgs: 4 }, { kind: 'exec', template: 'echo {}', group: { mode: 'n', max: 4 } }],
    [{ exec: 'echo {}', maxArgs: 1 }, { kind: 'exec', template: 'echo {}' }],
    [{ exec: 'echo {1}', maxReplaceArgs: 2 }, { kind: 'exec', template: 'echo {1}', group: { mode: 'N', max: 2 } }],
    [{ exec: 'echo {}', xargs: true }, { kind: 'exec', template: 'echo {}', group: { mode: 'X', max: 64 } }],
    [{ exec: 'echo {}', xargs: false }, { kind: 'exec', template: 'echo {}' }],
    [{ exec: 'echo {}', multiple: true, maxItems: 9 }, { kind: 'exec', template: 'echo {}', group: { mode: 'm', max: 9 } }],
  ];
  for (const [fields, stored] of cases) {
    it(`${JSON.stringify(fields)}`, async () => {
      const dir = tempDir();
      writeFileSync(join(dir, 'splitdance.json'), JSON.stringify({ ...fields, batch: 'b' }));
      const r = await mainIn(dir, ['run', ':::', 'a', 'b', 'c']);
      expect(r.code, r.stderr).toBe(0);
      expect(await storedHandler(dir)).toEqual(stored);
    });
  }

  it('a stage\'s grouping fields are its handler\'s; a module stage\'s maxItems too', async () => {
    const dir = tempDir();
    const stages = [
      { name: 'a', exec: 'echo {}', maxArgs: 2 },
      { name: 'b', needs: ['a'], handler: handler('ok'), maxItems: 3 },
    ];
    writeFileSync(join(dir, 'splitdance.json'), JSON.stringify({ stages, batch: 'b' }));
    const r = await mainIn(dir, ['run', ':::', 'x', 'y']);
    expect(r.code, r.stderr).toBe(0);
    const job = await readStore(dbPathIn(dir), async (s) => (await s.listBatches())[0]!.job);
    expect((job as { stages: { handler: unknown }[] }).stages.map((s) => s.handler)).toEqual([
      { kind: 'exec', template: 'echo {}', group: { mode: 'n', max: 2 } },
      { kind: 'module', path: handler('ok'), maxItems: 3 },
    ]);
  });
});

describe('refusals: exit 2 naming the words, nothing written', () => {
  // [argv, a job file or null, what stderr says]
  const cases: [string[], object | null, RegExp][] = [
    [['run', '-n', '2', '-N', '2', '--exec', 'echo {}', ':::', 'a'], null, /give either -n or -N, not both/],
    [['run', '-X', '-m', '--exec', 'echo {}', ':::', 'a'], null, /give either -X or -m, not both/],
    [['run', '-n', '0', '--exec', 'echo {}', ':::', 'a'], null, /-n\/--max-args expects a whole number from 1 to 1024; got "0"/],
    [['run', '-N', 'two', '--exec', 'echo {}', ':::', 'a'], null, /-N\/--max-replace-args expects a whole number from 1 to 1024; got "two"/],
    [['run', '-X', '--max-items', '0', '--exec', 'echo {}', ':::', 'a'], null, /--max-items expects a whole number from 1 to 1024; got "0"/],
    [['run', '-n', '1025', '--exec', 'echo {}', ':::', 'a'], null, /-n\/--max-args expects a whole number from 1 to 1024; got "1025"/],
    [['run', ':::', 'a'], { exec: 'echo {}', maxArgs: 5000 }, /field "maxArgs": too big/i],
    [['run', '--max-items', '8', '--exec', 'echo {}', ':::', 'a'], null, /--max-items bounds how many items -X or -m put into one command \(-n N says it itself\): add -X, -m or -n N, or leave --max-items out/],
    [['run', '-n', '4', '--max-items', '8', '--exec', 'echo {}', ':::', 'a'], null, /-n 4 already says how many items one command gets: leave --max-items out/],
    [['run', '--max-items', '8', ':::', 'a'], null, /--max-items bounds the items of one --exec command \(with -X or -m\) or of one call of a --handler module's batch export/],
    [['run', '-n', '2', '--handler', 'h.mjs', ':::', 'a'], null, /-n groups the items of an --exec command; a --handler module groups them by exporting batch\(tasks, ctx\), and --max-items N bounds how many one call gets: leave -n out/],
    [['run', '-X', '--pipe', '--exec', 'cat', ':::', 'a'], null, /-X puts many items into one command, and --pipe gives a command one item's \(or one chunk's\) bytes on its stdin: leave out --pipe or -X/],
    [['run', '-n', '2', '--output', 'out/{}', '--exec', 'cp {} {out}', ':::', 'a'], null, /--exec with -n 2 runs one command for many items, and a declared output \(--output, \{out\}\) needs one item per command: drop -n 2 or --output/],
    [['run', '-X', '--output', 'out/{}', '--exec', 'touch {out}', ':::', 'a'], null, /drop -X or --output/],
    [['run', ':::', 'a'], { exec: 'echo {}', maxArgs: 2, xargs: true }, /splitdance\.json: give either "maxArgs" or "xargs", not both/],
    [['run', ':::', 'a'], { exec: 'echo {}', maxArgs: 0 }, /field "maxArgs": too small/i],
    [['run', ':::', 'a'], { exec: 'echo {}', maxItems: 3 }, /"maxItems" bounds how many items "xargs" or "multiple" put into one command/],
    [['run', ':::', 'a'], { exec: 'cat', pipe: true, multiple: true }, /"multiple" puts many items into one command, and "pipe" gives/],
    [['run', ':::', 'a'], { handler: 'h.mjs', maxReplaceArgs: 2 }, /"maxReplaceArgs" groups the items of an "exec" command; a "handler" module groups them by exporting batch/],
    [['run', ':::', 'a'], { exec: 'cp {} {out}', output: 'out/{}', maxArgs: 2 }, /"exec" of .*splitdance\.json with "maxArgs": 2 runs one command for many items, .*: drop "maxArgs": 2 or "output"/],
    [['run', ':::', 'a'], { stages: [{ name: 's', exec: 'echo {}' }], xargs: true }, /splitdance\.json: "xargs" puts many items into one "exec" command: give "exec" with it/],
    [['run', ':::', 'a'], { stages: [{ name: 's', exec: 'echo {}', maxArgs: 2, maxReplaceArgs: 3 }] }, /splitdance\.json: stage "s": give either "maxArgs" or "maxReplaceArgs", not both/],
    [['run', ':::', 'a'], { stages: [{ name: 's', exec: 'cp {} {out}', output: 'out/{}', maxArgs: 2 }] }, /stage "s"'s exec with "maxArgs": 2 runs one command for many items/],
  ];
  for (const [argv, job, said] of cases) {
    it(`splitdance ${shown(argv)}${job ? ` with ${JSON.stringify(job)}` : ''}`, async () => {
      const dir = tempDir();
      mkdirSync(join(dir, 'out'));
      if (job) writeFileSync(join(dir, 'splitdance.json'), JSON.stringify(job));
      const r = await mainIn(dir, argv);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr.replace(/\n(?!$)/g, ' ')).toMatch(said);
      // A flag's message reaches an 80-column terminal whole (a job file's is prefixed with its path).
      if (!job && !/expects a whole number/.test(r.stderr)) for (const line of r.stderr.split('\n')) expect(line.length, line).toBeLessThanOrEqual(80);
      expect(existsSync(dbPathIn(dir))).toBe(false);
    });
  }
});
