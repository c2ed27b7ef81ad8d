import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { mainIn } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';

/**
 * One JSON vocabulary (SPEC §7): every command's --json output against one schema each.
 * Strict objects, so an old or stray name (`name` for a batch, `tasks`/`newTasks` in a dry
 * run, `clusters` beside `topErrors`) fails; each output is one line per object. The shapes
 * are the ones docs/scripting.md shows.
 */
const at = z.iso.datetime({ precision: 3 });
const atOrNull = at.nullable();
const count = z.number().int().nonnegative();
const counts = { total: count, pending: count, retrying: count, running: count, queued: count, succeeded: count, failed: count, cancelled: count };
const status = z.enum(['PENDING', 'RUNNING', 'SUCCESS', 'FAILED', 'CANCELLED']);
const outcome = z.enum(['SUCCESS', 'FAILED', 'TIMEOUT', 'CRASHED', 'LOST', 'INTERRUPTED', 'BUSY']);

const task = {
  key: z.string(),
  stage: z.string().nullable(),
  item: z.string().nullable(),
  status,
  attempts: count,
  maxAttempts: count,
  lastError: z.string().nullable(),
  durationMs: count.nullable(),
  nextRunAt: atOrNull,
  startedAt: atOrNull,
  finishedAt: atOrNull,
  workerId: z.string().nullable(),
  upToDate: z.boolean(),
  /** What a module handler returned (a declared output's `out` folded in), or null. */
  result: z.union([z.null(), z.string(), z.number(), z.boolean(), z.array(z.unknown()), z.record(z.string(), z.unknown())]),
};

const SCHEMAS = {
  status: z.strictObject({
    batch: z.string(),
    source: z.string(),
    ...counts,
    done: z.boolean(),
    startedAt: atOrNull,
    updatedAt: atOrNull,
    tasksPerSecond: z.number().nonnegative().nullable(),
    etaSeconds: z.number().nonnegative().nullable(),
    nextRetryAt: atOrNull,
    upToDate: count,
    changed: count,
    topErrors: z.array(z.strictObject({ error: z.string(), count, example: z.string(), cluster: z.string(), signature: z.string() })),
    storeBytes: count,
    stages: z.array(z.strictObject({ stage: z.string(), ...counts })),
    owners: z.array(z.strictObject({ owner: z.string(), pid: z.number().int().nullable(), state: z.enum(['alive', 'stopped', 'dead', 'elsewhere']), tasks: count })),
    adaptive: z.array(z.strictObject({ owner: z.string(), level: z.number().int().positive(), max: z.number().int().positive(), pace: z.number().positive().nullable() })),
    hooks: z.array(
      z.strictObject({
        hook: z.enum(['complete', 'failure']),
        id: z.string(),
        runs: z.number().int().positive(),
        startedAt: z.string(),
        endedAt: z.string().nullable(),
        exitCode: z.number().int().nullable(),
        signal: z.string().nullable(),
        output: z.string().nullable(),
      }),
    ),
    outputsPending: count,
    pendingOutputs: z.array(z.strictObject({ key: z.string(), out: z.string().nullable(), temp: z.string() })),
  }),
  tasks: z.array(z.strictObject(task)),
  show: z.strictObject({
    ...task,
    attempts: z.array(
      z.strictObject({
        attempt: z.number().int().positive(),
        outcome: outcome.nullable(),
        startedAt: at,
        endedAt: atOrNull,
        durationMs: count.nullable(),
        workerId: z.string(),
        host: z.string(),
        pid: z.number().int().nullable(),
        exitCode: z.number().int().nullable(),
        signal: z.string().nullable(),
        error: z.string().nullable(),
        outputTail: z.string().nullable(),
        logPath: z.string().nullable(),
        jobVersion: z.number().int().nullable(),
      }),
    ),
    attemptsCount: count,
    needs: z.array(z.string()),
    payload: z.looseObject({ version: z.literal(1), path: z.string(), rel: z.string() }),
    fingerprint: z.string().nullable(),
    outputPending: z.strictObject({ out: z.string().nullable(), temp: z.string() }).nullable(),
  }),
  batches: z.array(z.strictObject({ batch: z.string(), source: z.string(), createdAt: at, paused: z.boolean(), ...counts })),
  dryRun: z.strictObject({
    dryRun: z.literal(true),
    source: z.string(),
    kind: z.enum(['directory', 'file', 'items']),
    batch: z.string(),
    batchExists: z.boolean(),
    store: z.string(),
    total: count,
    inserted: count,
    upToDate: count,
    firstKeys: z.array(z.string()),
    chunking: z.union([z.strictObject({ lines: count }), z.strictObject({ chunkSize: count })]).nullable(),
    sample: z.unknown(),
    handler: z.looseObject({ kind: z.string() }),
    output: z.string().nullable(),
    stages: z.array(z.unknown()).optional(),
    concurrency: count,
    retries: count,
    timeoutMs: count.nullable(),
    heartbeatTimeoutMs: count.nullable(),
    retryQuiet: z.boolean(),
    permanentCodes: z.array(z.number().int()),
    permanentErrors: z.array(z.string()),
    order: z.enum(['key', 'size', 'history', 'random']),
    priority: z.array(z.strictObject({ glob: z.string(), n: z.number().int() })),
    succeeded: count,
    failed: count,
    retrying: count,
    changed: count,
    wouldRerunChanged: count,
    commands: z.array(
      z.union([
        z.strictObject({ key: z.string(), command: z.string(), reason: z.string().optional() }),
        z.strictObject({ key: z.string(), payload: z.looseObject({ version: z.literal(1) }), reason: z.string().optional() }),
        z.strictObject({ key: z.string(), error: z.string(), reason: z.string().optional() }),
      ]),
    ),
    moreCommands: z.boolean(),
    skipped: z.array(z.strictObject({ key: z.string(), reason: z.string() })),
  }),
  prune: z.strictObject({ dryRun: z.boolean(), batches: z.array(z.string()), tasks: count, attempts: count, logBytes: count }),
  paused: z.strictObject({ batch: z.string(), paused: z.boolean() }),
  set: z.strictObject({
    batch: z.string(),
    order: z.enum(['key', 'size', 'history', 'random']),
    priority: z.array(z.strictObject({ glob: z.string(), n: z.number().int() })),
    rate: z.string().nullable(),
    rateKey: z.string().nullable(),
    concurrency: z.number().int().positive().nullable(),
    adaptive: z.boolean(),
    moved: count,
  }),
  cancel: z.strictObject({ batch: z.string(), cancelled: count, stopping: count, dependents: count }),
  retryFailed: z.strictObject({ batch: z.string(), reset: count }),
  report: z.strictObject({ batch: z.string(), file: z.string(), attempts: count }),
  /** `run --json` and `worker --json`: one event per line. Loose: an event may gain fields, never lose or rename these. */
  event: z.discriminatedUnion('event', [
    z.looseObject({ event: z.literal('start'), batch: z.string(), source: z.string(), store: z.string(), total: count, inserted: count, workers: count, notes: z.array(z.string()), at }),
    z.looseObject({
      event: z.literal('attempt'),
      key: z.string(),
      attempt: z.number().int().positive(),
      outcome,
      terminal: z.boolean(),
      status,
      durationMs: count,
      exitCode: z.number().int().nullable(),
      error: z.string().nullable(),
      at,
    }),
    z.looseObject({ event: z.literal('end'), batch: z.string(), exitCode: count, reason: z.string(), elapsedMs: count, ...counts, upToDate: count, at }),
    z.looseObject({ event: z.literal('note'), message: z.string(), at }),
    z.looseObject({ event: z.literal('released'), key: z.string(), owner: z.string().nullable(), failed: z.boolean(), at }),
    z.looseObject({ event: z.literal('error'), message: z.string(), at }),
  ]),
};

/** The one line a command printed, parsed and checked against `schema`. */
function oneLine(schema: z.ZodType, stdout: string, what: string): void {
  const lines = stdout.split('\n').filter(Boolean);
  expect(lines, `${what}: one line`).toHaveLength(1);
  const parsed = schema.safeParse(JSON.parse(lines[0]!));
  expect(parsed.success ? [] : parsed.error.issues, what).toEqual([]);
}

function events(stdout: string, what: string): string[] {
  const names: string[] = [];
  for (const l of stdout.split('\n').filter(Boolean)) {
    const parsed = SCHEMAS.event.safeParse(JSON.parse(l));
    expect(parsed.success ? [] : parsed.error.issues, `${what}: ${l}`).toEqual([]);
    names.push((JSON.parse(l) as { event: string }).event);
  }
  return names;
}

describe('every --json output against its schema', () => {
  it('run, status, tasks, show, batches, dry-run, report, pause, resume, set, retry-failed, worker, cancel and prune print one schema each; logs refuses --json', async () => {
    const p = projectWithFiles(3);
        const exec = "case {key} in f002.log) echo bad >&2; exit 3;; esac; echo ok";
    const run = await mainIn(p.dir, ['run', 'src', '--batch', 'b', '--exec', exec, '--retries', '0', '--json']);
    expect(run.code).toBe(1);
    expect(events(run.stdout, 'run')).toEqual(['start', 'attempt', 'attempt', 'attempt', 'end']);

    const check = async (args: string[], schema: z.ZodType, code = 0) => {
      const r = await mainIn(p.dir, [...args, '--json']);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(code);
      oneLine(schema, r.stdout, args.join(' '));
      return JSON.parse(r.stdout);
    };
    const s = await check(['status', '--batch', 'b'], SCHEMAS.status, 1);
    expect(s.topErrors).toMatchObject([{ error: 'exit code 3: bad', count: 1, example: 'f002.log' }]);
    await check(['tasks', '--batch', 'b'], SCHEMAS.tasks);
    await check(['show', 'f002.log', '--batch', 'b'], SCHEMAS.show);
    expect(await check(['batches'], SCHEMAS.batches)).toMatchObject([{ batch: 'b', total: 3 }]);
    expect(await check(['run', 'src', '--batch', 'b', '--dry-run'], SCHEMAS.dryRun)).toMatchObject({ total: 3, inserted: 0, succeeded: 2, failed: 1 });
    await check(['report', '--batch', 'b', '--html', 'r.html'], SCHEMAS.report);
    await check(['pause', '--batch', 'b'], SCHEMAS.paused);
    await check(['resume', '--batch', 'b'], SCHEMAS.paused);
    expect(await check(['set', '--batch', 'b', '--order', 'size', '--priority', 'f0*=2'], SCHEMAS.set)).toMatchObject({ order: 'size', priority: [{ glob: 'f0*', n: 2 }] });
    await check(['retry-failed', '--batch', 'b'], SCHEMAS.retryFailed);
    const worker = await mainIn(p.dir, ['worker', '--batch', 'b', '--json']);
    expect(worker.code).toBe(1);
    expect(events(worker.stdout, 'worker')).toEqual(['start', 'attempt', 'end']);
    await check(['cancel', '--batch', 'b'], SCHEMAS.cancel);
    expect(await check(['prune', '--batch', 'b', '--dry-run'], SCHEMAS.prune)).toMatchObject({ dryRun: true, batches: ['b'] });
    expect(await check(['prune', '--batch', 'b'], SCHEMAS.prune)).toMatchObject({ dryRun: false, batches: ['b'] });

    const logs = await mainIn(p.dir, ['logs', 'f000.log', '--json']);
    expect(logs.code).toBe(2);
    expect(logs.stdout).toBe('');
    expect(logs.stderr).toMatch(/logs has no --json/);
  });
});
