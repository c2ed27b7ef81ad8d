import { basename, dirname, join, resolve } from 'node:path';
import { UsageError } from '../../errors.js';
import { defaultBatchName, expandBatchName } from '../../job/batch-name.js';
import { findJobFile } from '../../job/job-file-path.js';
import { DEFAULT_SETTINGS, describeHandler, mergeSettings, settingsOf, type JobDefinition, type JobSettings } from '../../job/job-definition.js';
import { parseSample, sampled, type Sample } from '../../split/sample.js';
import { sourceKind, splitSource, type SourceKind } from '../../split/split-source.js';
import { expandStages, layoutOf } from '../../job/stages.js';
import { checkTemplate } from '../../worker/exec-template.js';
import type { BatchRecord, TaskSpec, TaskStore } from '../../store/task-store.js';
import { givenSettings, invocationOf, type Invocation, type RunFlags } from './run-flags.js';

/** Everything `run` decided before touching anything: what to split, how, into which batch. */
export interface RunPlan {
  flags: RunFlags;
  source: string;
  kind: SourceKind;
  dbPath: string;
  batchName: string;
  existing: BatchRecord | undefined;
  /** Has a handler, or stages that each have theirs. */
  settings: JobSettings;
  /** Settings this command changes on an existing batch. */
  changed: string[];
  inv: Invocation;
  sample: Sample | null;
  rerunChanged: boolean;
  /** A fresh stream of the (sampled) task specs; `onSkip` hears of files that cannot be tasks. */
  split(onSkip?: (path: string) => void): Iterable<TaskSpec>;
  notes: string[];
}

/** Resolves the job file, flags, stored batch settings and source into a plan (reads only). */
export async function planRun(
  sourceArg: string | undefined,
  cliFlags: RunFlags,
  cwd: string,
  store: TaskStore | null,
  db: string,
): Promise<RunPlan> {
  const jobPath = findJobFile(cliFlags.job, cwd);
  const file = jobPath ? (await import('../../job/job-file.js')).readJobFile(jobPath) : null;
  const flags: RunFlags = { ...definedOnly(file?.flags ?? {}), ...cliFlags }; // flags win over the file
  const sourceGiven = sourceArg ?? file?.source;
  if (sourceGiven === undefined) {
    throw new UsageError(`no source: give one (\`splitdance run ./logs\`) or set "source" in ${jobPath ?? 'splitdance.json'}`);
  }
  const source = resolve(cwd, sourceGiven);
  const given = { ...givenSettings(flags, cwd), stages: file?.stages };
  const inv = invocationOf(flags);
  const sample = flags.sample === undefined ? null : parseSample(flags.sample);
  const kind = sourceKind(source);
  const batchName = flags.batch !== undefined ? expandBatchName(flags.batch) : defaultBatchName(source);
  if (batchName.trim() === '') throw new UsageError('--batch needs a non-empty name');
  const existing = store ? await store.findBatch(batchName) : undefined;
  const stored = existing ? settingsOf(existing.job as unknown as JobDefinition) : DEFAULT_SETTINGS;
  const { settings, changed } = mergeSettings(stored, given);
  checkStages(settings, stored, existing, batchName, given.handler !== undefined);
  if (!settings.handler && settings.stages.length === 0) {
    throw new UsageError("no handler: give --exec 'COMMAND {}' or --handler ./module.js (a new batch has none stored)");
  }
  const notes =
    existing && changed.length
      ? [`batch ${batchName}: ${changed.join(', ')} changed for the unfinished tasks (handler now ${describeHandler(settings.handler, settings.stages)})`]
      : [];
  return {
    flags,
    source,
    kind,
    dbPath: db,
    batchName,
    existing,
    settings,
    changed,
    inv,
    sample,
    rerunChanged: flags.rerunChanged === true,
    notes,
    split(onSkip) {
      const make = () =>
        splitSource(source, kind, {
          include: settings.include,
          exclude: settings.exclude,
          chunkSize: settings.chunkSize,
          lines: settings.lines,
          skip: storeFiles(db),
          onSkip,
        });
      return expandStages(sample ? sampled(make, sample) : make(), settings);
    },
  };
}

/**
 * Stages and a single handler exclude each other, and a batch keeps the stage layout
 * (names and needs) it was created with: its task keys are built from it.
 */
function checkStages(settings: JobSettings, stored: JobSettings, existing: BatchRecord | undefined, batch: string, handlerGiven: boolean): void {
  if (existing && layoutOf(stored.stages) !== layoutOf(settings.stages)) {
    throw new UsageError(
      `batch ${batch} was created with ${layoutOf(stored.stages)}, not ${layoutOf(settings.stages)}; ` +
        'task keys follow the stages, so use a new --batch for a different pipeline',
    );
  }
  if (settings.stages.length === 0) return;
  if (handlerGiven || settings.handler) {
    throw new UsageError(`batch ${batch} has stages, each with its own handler; --exec/--handler cannot replace them (edit the stages in the job file)`);
  }
  for (const s of settings.stages) if (s.handler.kind === 'exec') checkTemplate(s.handler.template, s.needs);
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
