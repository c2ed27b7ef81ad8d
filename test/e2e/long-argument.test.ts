import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, runCli, tempDir } from '../helpers/cli.js';
import { storedAttempts, storedTasks } from '../helpers/store.js';

// An argument over Linux's per-argument limit (MAX_ARG_STRLEN, 128 KiB) makes exec fail with
// E2BIG. It is a failed attempt naming the argument and the limit, not retried (the same task
// gives the same argument), on both ways a command starts: the spawner helper and Node's own
// spawn (which throws E2BIG instead of emitting it, and used to take the worker down with it).

const SPAWNER_BUILT = existsSync(join(ROOT, 'dist/native/spawner'));
const BIG = 200_000;

const WAYS = [
  { name: 'the spawner helper', env: {}, extra: [], skip: !SPAWNER_BUILT },
  { name: "Node's spawn (SPLITDANCE_SPAWNER=node)", env: { SPLITDANCE_SPAWNER: 'node' }, extra: [], skip: false },
  { name: '--print (always Node\'s spawn)', env: {}, extra: ['--print'], skip: false },
  { name: '--pipe (always Node\'s spawn)', env: {}, extra: ['--pipe'], skip: false },
];

describe('an argument over the system limit (E2BIG)', () => {
  for (const way of WAYS) {
    for (const [shape, exec] of [
      ['a shell line', 'echo {} | wc -c'],
      ['a direct command', 'printf %s {}'],
    ] as const) {
      it.skipIf(way.skip)(`fails that attempt, naming the argument and the limit: ${way.name}, ${shape}`, async () => {
        const dir = tempDir();
        writeFileSync(join(dir, 'items.txt'), `a\n${'x'.repeat(BIG)}\nb\nc\n`);
        const db = join(dir, 'store.db');
        const r = await runCli(['run', '--items', 'items.txt', '--exec', exec, '-j', '1', '--retries', '2', '--db', db, ...way.extra], { cwd: dir, env: way.env });
        expect(r.code, r.stderr).toBe(1); // FAILED tasks
        expect(r.stderr).not.toContain('CRASHED');
        expect(r.stderr).toContain('argument 2 is 195.3 KiB, over the 128 KiB per-argument limit of the system (E2BIG)');
        const tasks = await storedTasks(db);
        expect(tasks.map((t) => [t.payload.item!.length, t.status, t.attempts])).toEqual([
          [1, 'SUCCESS', 1],
          [BIG, 'FAILED', 1], // not retried: the same argument would come back
          [1, 'SUCCESS', 1],
          [1, 'SUCCESS', 1],
        ]);
        expect(tasks[1]!.lastError).toMatch(/^could not start \S+: argument 2 is 195\.3 KiB, over the 128 KiB per-argument limit/);
        // One worker ran them all: none crashed and none was replaced.
        const workers = await storedAttempts(db);
        expect(new Set(workers.map((w) => w.workerId)).size).toBe(1);
        expect(workers.map((w) => w.outcome).sort()).toEqual(['FAILED', 'SUCCESS', 'SUCCESS', 'SUCCESS']);
      });
    }
  }
});
