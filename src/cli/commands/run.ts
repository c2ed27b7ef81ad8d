import { basename, dirname, join, resolve } from 'node:path';
import { UsageError } from '../../errors.js';
import { Coordinator, type StopReason } from '../../coordinator/coordinator.js';
import { WorkerPool } from '../../coordinator/pool.js';
import { recoverStale } from '../../coordinator/recovery.js';
import { defaultBatchName, expandBatchName } from '../../job/batch-name.js';
import {
  DEFAULT_SETTINGS,
  definitionOf,
  describeHandler,
  mergeSettings,
  settingsOf,
  type JobDefinition,
} from '../../job/job-definition.js';
import { parseCountOrPercent } from '../../job/units.js';
import { findJobFile, readJobFile } from '../../job/job-file.js';
import { nonEmpty, sourceKind, splitSource } from '../../split/split-source.js';
import { openStore, resolveDbPath, storeExists } from '../../store/open-store.js';
import type { TaskStore } from '../../store/task-store.js';
import { EXIT } from '../exit-codes.js';
import { colors, type Io } from '../io.js';
import { RunReporter, type ReportMode } from '../run-reporter.js';
import { drainOnSignals } from '../signals.js';
import { givenSettings, invocationOf, type RunFlags } from './run-flags.js';

const KILL_GRACE_MS = 2000;

/**
 * `splitdance run <source>`: split the source into the batch (idempotently) and run
 * it to the end. Nothing is written until the workers have loaded the handler.
 */
export async function runCommand(sourceArg: string | undefined, cliFlags: RunFlags, io: Io): Promise<number> {
  const jobPath = findJobFile(cliFlags.job, io.cwd);
  const file = jobPath ? readJobFile(jobPath) : null;
  const flags: RunFlags = { ...definedOnly(file?.flags ?? {}), ...cliFlags }; // flags win over the file
  const sourceGiven = sourceArg ?? file?.source;
  if (sourceGiven === undefined) {
    throw new UsageError(`no source: give one (\`splitdance run ./logs\`) or set "source" in ${jobPath ?? 'splitdance.json'}`);
  }
  const source = resolve(io.cwd, sourceGiven);
  const given = givenSettings(flags, io.cwd);
  const inv = invocationOf(flags);
  const kind = sourceKind(source);
  const dbPath = resolveDbPath(flags.db, io.cwd, io.env);
  const batchName = flags.batch !== undefined ? expandBatchName(flags.batch) : defaultBatchName(source);
  if (batchName.trim() === '') throw new UsageError('--batch needs a non-empty name');

  let store: TaskStore | null = storeExists(dbPath) ? openStore(dbPath, { create: false }) : null;
  try {
    const existing = store ? await store.findBatch(batchName) : undefined;
    const stored = existing ? settingsOf(existing.job as unknown as JobDefinition) : DEFAULT_SETTINGS;
    const { settings, changed } = mergeSettings(stored, given);
    if (!settings.handler) {
      throw new UsageError('no handler: give --exec \'COMMAND {}\' or --handler ./module.js (a new batch has none stored)');
    }
    const notes = existing && changed.length ? [`batch ${batchName}: ${changed.join(', ')} changed for the unfinished tasks (handler now ${describeHandler(settings.handler)})`] : [];

    const pool = new WorkerPool({
      size: inv.concurrency,
      handler: settings.handler,
      killGraceMs: KILL_GRACE_MS,
      maxTasksPerWorker: inv.maxTasksPerWorker,
      maxWorkerMemory: inv.maxWorkerMemory,
      idPrefix: `${process.pid}.`,
    });
    await pool.start(); // a broken handler fails here, before the store is touched
    try {
      const unnamed: string[] = [];
      const split = splitSource(source, kind, {
        include: settings.include,
        exclude: settings.exclude,
        chunkSize: settings.chunkSize,
        lines: settings.lines,
        skip: storeFiles(dbPath),
        onSkip: (path) => unnamed.push(path),
      });
      const specs = existing ? split : nonEmpty(split, source, kind); // an empty new source: exit 2, no store
      store ??= openStore(dbPath, { create: true });
      const job = definitionOf(source, settings);
      const maxAttempts = settings.retries + 1;
      const { batch, inserted } = await store.enqueue(
        { name: batchName, source, job: job as unknown as Record<string, unknown>, maxAttempts },
        specs,
      );
      if (existing && changed.length) await store.updateJob(batch.id, job as unknown as Record<string, unknown>, maxAttempts);
      if (unnamed.length) {
        const shown = unnamed.slice(0, 5).join(', ') + (unnamed.length > 5 ? `, … (${unnamed.length - 5} more)` : '');
        notes.push(`skipped ${unnamed.length} file${unnamed.length === 1 ? '' : 's'} whose name is not valid UTF-8: ${shown}; rename them to run them`);
      }
      return await drive(store, batch, pool, settings, inv, { io, flags, dbPath, inserted, notes });
    } finally {
      await pool.shutdown();
    }
  } finally {
    await store?.close();
  }
}

async function drive(
  store: TaskStore,
  batch: Awaited<ReturnType<TaskStore['enqueue']>>['batch'],
  pool: WorkerPool,
  settings: ReturnType<typeof settingsOf>,
  inv: ReturnType<typeof invocationOf>,
  ctx: { io: Io; flags: RunFlags; dbPath: string; inserted: number; notes: string[] },
): Promise<number> {
  const { io, flags } = ctx;
  const total = (await store.counts(batch.id)).total;
  const mode: ReportMode = flags.json ? 'json' : flags.quiet ? 'quiet' : io.tty ? 'tty' : 'plain';
  const reporter = new RunReporter(io, mode, colors(io, flags), () => store.counts(batch.id), inv.progressIntervalMs);
  const coordinator = new Coordinator(
    store,
    batch,
    pool,
    {
      rules: {
        policy: {
          backoffMs: settings.backoffMs,
          factor: settings.backoffFactor,
          maxBackoffMs: settings.maxBackoffMs,
          jitter: settings.jitter,
        },
        permanentCodes: settings.permanentCodes,
        timeoutMs: settings.timeoutMs,
      },
      leaseMs: inv.leaseMs,
      graceMs: inv.graceMs,
      killGraceMs: KILL_GRACE_MS,
      noWait: inv.noWait,
      maxFailures: inv.maxFailures === null ? null : parseCountOrPercent(inv.maxFailures, '--max-failures', total),
      maxRuntimeMs: inv.maxRuntimeMs,
      logDir: join(dirname(ctx.dbPath), 'logs'),
      pollMs: 1000,
    },
    reporter,
  );
  // Tasks a dead coordinator on this host left RUNNING are taken back now, not after their lease.
  const released = await recoverStale(store, batch.id, coordinator.owner);
  reporter.start({
    batch: batch.name,
    source: batch.source,
    store: ctx.dbPath,
    total,
    inserted: ctx.inserted,
    workers: pool.size,
    notes: ctx.notes,
  });
  if (released.length) reporter.released(released);
  const started = Date.now();
  const removeSignals = drainOnSignals(coordinator, inv.graceMs, (m) => reporter.note(m));
  let stop: StopReason;
  try {
    stop = await coordinator.run();
  } finally {
    removeSignals();
  }
  const counts = await store.counts(batch.id);
  const { exitCode, reason } = exitFor(stop, counts);
  await reporter.finish({ batch: batch.name, exitCode, reason, counts, elapsedMs: Date.now() - started });
  return exitCode;
}

function exitFor(stop: StopReason, c: { failed: number; cancelled: number }): { exitCode: number; reason: string } {
  switch (stop.kind) {
    case 'signal':
      return stop.signal === 'SIGINT'
        ? { exitCode: EXIT.SIGINT, reason: 'interrupted (SIGINT); run again to resume' }
        : { exitCode: EXIT.SIGTERM, reason: 'terminated (SIGTERM); run again to resume' };
    case 'max-runtime':
      return { exitCode: EXIT.INCOMPLETE, reason: '--max-runtime reached; run again to resume' };
    case 'no-wait':
      return { exitCode: EXIT.INCOMPLETE, reason: 'incomplete (--no-wait): retries are due later; run again to resume' };
    case 'max-failures':
      return { exitCode: EXIT.FAILED, reason: 'stopped: --max-failures reached' };
    case 'done':
      return c.failed + c.cancelled > 0 ? { exitCode: EXIT.FAILED, reason: 'finished with failures' } : { exitCode: EXIT.OK, reason: 'done' };
  }
}

/** The store's own files, never split even when the store lives inside the source. */
function storeFiles(dbPath: string): string[] {
  const dir = dirname(dbPath);
  const own = [dbPath, `${dbPath}-wal`, `${dbPath}-shm`, `${dbPath}-journal`, join(dir, 'logs')];
  return basename(dir) === '.splitdance' ? [...own, dir] : own;
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
