import { realpathSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { UsageError } from '../errors.js';
import { checkBatchName, defaultBatchName, expandBatchName } from './batch-name.js';
import { findJobFile } from './job-file-path.js';
import { DEFAULT_SETTINGS, describeHandler, mergeSettings, settingsOf, type JobDefinition, type JobSettings } from './job-definition.js';
import { inputFromFlags, invocationOf, layerInputs, printOf, type Invocation, type RawRunFlags, type RunInput } from './run-options.js';
import { sampled, type Sample } from '../split/sample.js';
import { sourceKind, splitSource, type SourceKind } from '../split/split-source.js';
import { expandStages, layoutOf } from './stages.js';
import { checkTemplate } from '../worker/exec-template.js';
import { templateWarnings } from './template-warnings.js';
import { printable } from '../printable.js';
import { storePathAt, storePaths } from '../replaceable-path.js';
import { isPostgresUrl, logRoot } from '../store/open-store.js';
import type { TaskSpec } from '../store/task-store.js';
import type { OutputProblem } from '../output/planned-outputs.js';

/** What planning needs to know of a batch already in the store: only its stored definition. */
export interface StoredBatch {
  job: unknown;
  /** The source it was split from (absolute): another one is never merged into it. */
  source: string;
}

/** Everything `run` decided before touching anything: what to split, how, into which batch. */
export interface RunPlan {
  /** The command line's own flags (output mode, --db, --dry-run); every setting is below, typed. */
  flags: RawRunFlags;
  source: string;
  kind: SourceKind;
  dbPath: string;
  batchName: string;
  existing: StoredBatch | undefined;
  /** Has a handler, or stages that each have theirs. */
  settings: JobSettings;
  /** Settings this command changes on an existing batch. */
  changed: string[];
  inv: Invocation;
  sample: Sample | null;
  rerunChanged: boolean;
  /** A fresh stream of the (sampled) task specs; `onSkip` hears of files that cannot be tasks. */
  split(onSkip?: (path: string, reason: string) => void): Iterable<TaskSpec>;
  notes: string[];
}

export interface PlanOptions {
  /** Run the batch's stored definition only: no job file is read (`retry-failed --run`). */
  storedOnly?: boolean;
}

/**
 * The options pipeline's last step: flags and job file (each parsed once, into typed values),
 * layered over the batch's stored definition, into one validated plan. Reads only: the
 * store is consulted through `findBatch`, which must not write (not even a migration).
 */
export async function planRun(
  sourceArg: string | undefined,
  cliFlags: RawRunFlags,
  cwd: string,
  findBatch: (name: string) => Promise<StoredBatch | undefined>,
  db: string,
  options: PlanOptions = {},
): Promise<RunPlan> {
  const fromFlags = inputFromFlags(cliFlags, cwd);
  const jobPath = options.storedOnly ? null : findJobFile(cliFlags.job, cwd);
  const fromFile: RunInput | null = jobPath ? (await import('./job-file.js')).readJobFile(jobPath, cwd) : null;
  const input = fromFile ? layerInputs(fromFile, fromFlags) : fromFlags; // flags win over the file
  const sourceGiven = sourceArg ?? input.source;
  if (sourceGiven === undefined) {
    throw new UsageError(`no source: give one (\`splitdance run ./logs\`) or set "source" in ${jobPath ?? 'splitdance.json'}`);
  }
  const source = resolve(cwd, sourceGiven);
  const inv = invocationOf(input);
  if (inv.print && cliFlags.json) printOf(true, false, false, true); // a job file's "print" meets --json: refused the same way
  const kind = sourceKind(source);
  const batchName = input.batch !== undefined ? expandBatchName(input.batch) : defaultBatchName(source);
  if (batchName.trim() === '') throw new UsageError('--batch needs a non-empty name');
  checkBatchName(batchName);
  const existing = await findBatch(batchName);
  if (existing) checkSameSource(existing.source, source, batchName);
  const stored = existing ? settingsOf(existing.job as JobDefinition) : DEFAULT_SETTINGS;
  const { settings, changed } = mergeSettings(stored, input.settings);
  checkStages(settings, stored, existing, batchName, input.settings.handler !== undefined);
  if (!settings.handler && settings.stages.length === 0) {
    throw new UsageError("no handler: give --exec 'COMMAND {}' or --handler ./module.js (a new batch has none stored)");
  }
  if (settings.handler?.kind === 'exec') checkTemplate(settings.handler.template, [], settings.output !== null);
  const notes =
    existing && changed.length
      ? [`batch ${batchName}: ${changed.join(', ')} changed for the unfinished tasks (handler now ${describeHandler(settings.handler, settings.stages)})`]
      : [];
  if (settings.handler?.kind === 'exec') notes.push(...templateWarnings(settings.handler.template, kind, '--exec'));
  for (const st of settings.stages) if (st.handler.kind === 'exec') notes.push(...templateWarnings(st.handler.template, kind, `stage ${JSON.stringify(st.name)}'s exec`));
  const sample = input.sample ?? null;
  const plan: RunPlan = {
    flags: cliFlags,
    source,
    kind,
    dbPath: db,
    batchName,
    existing,
    settings,
    changed,
    inv,
    sample,
    rerunChanged: input.rerunChanged === true,
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
  const store = storePaths(isPostgresUrl(db) ? null : db, logRoot(db, cwd));
  if (inv.metricsFile !== null) {
    const at = storePathAt(inv.metricsFile, store);
    if (at !== null) throw new UsageError(`--metrics-file ${printable(inv.metricsFile)} is the store's ${printable(at)}; writing it would destroy the store: give a path outside it`);
  }
  if (settings.output || settings.stages.some((s) => s.output)) {
    const { findOutputProblem } = await import('../output/planned-outputs.js');
    const problem = findOutputProblem(settings, () => plan.split(), batchName, store);
    if (problem) throw new UsageError(outputProblemMessage(problem, settings));
  }
  return plan;
}

/** One line for a planned output that cannot be written: what, where, and the way out. */
function outputProblemMessage(problem: OutputProblem, settings: JobSettings): string {
  const stage = 'key' in problem ? problem.key : problem.first;
  const field = settings.output ? `--output ${JSON.stringify(settings.output.template)}` : `the "output" of stage ${JSON.stringify(stage.split('/')[0])}`;
  const path = printable(problem.path);
  switch (problem.kind) {
    case 'collision':
      return `${field} gives two tasks one output file: ${printable(problem.first)} and ${printable(problem.second)} both write ${path}; use a placeholder that tells them apart ({rel} or {key})`;
    case 'input':
      return problem.owner === problem.key
        ? `${field} is the input file itself for ${printable(problem.key)} (${path}); write the output elsewhere`
        : `${field} would overwrite the input of ${printable(problem.owner)}: ${printable(problem.key)} writes ${path}; write the outputs elsewhere`;
    case 'store':
      return `${field} would write ${path}, the store's ${printable(problem.storePath)} (for ${printable(problem.key)}); writing there would destroy the store: write the outputs elsewhere`;
    case 'blocked':
      return `${field}: ${path} (for ${printable(problem.key)}) is ${problem.what}, not a regular file; splitdance replaces only regular files: remove it or write the outputs elsewhere`;
  }
}

/**
 * A batch belongs to one source: a second folder merged into it would have its files with
 * existing keys never run, and the fingerprint check would then report changes that are not.
 * The same folder reached another way (a symlink, `./x` vs `x/`) is the same source.
 */
function checkSameSource(stored: string, given: string, batch: string): void {
  const real = realOrNull(stored);
  if (stored === given || (real !== null && real === realOrNull(given))) return;
  throw new UsageError(
    `batch ${printable(batch)} was split from ${printable(stored)}, not ${printable(given)}: ` +
      `run it with its own source, or give ${printable(given)} a batch of its own (--batch NEW)`,
  );
}

function realOrNull(path: string): string | null {
  try {
    return realpathSync(path);
  } catch {
    return null;
  }
}

/**
 * Stages and a single handler exclude each other, and a batch keeps the stage layout
 * (names and needs) it was created with: its task keys are built from it.
 */
function checkStages(settings: JobSettings, stored: JobSettings, existing: StoredBatch | undefined, batch: string, handlerGiven: boolean): void {
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
  if (settings.output) throw new UsageError(`batch ${batch} has stages: each declares its own "output" in the job file; --output cannot give them one`);
  for (const s of settings.stages) if (s.handler.kind === 'exec') checkTemplate(s.handler.template, s.needs, s.output !== undefined);
}

/** The store's own files, never split even when the store lives inside the source. */
function storeFiles(dbPath: string): string[] {
  const dir = dirname(dbPath);
  const own = [dbPath, `${dbPath}-wal`, `${dbPath}-shm`, `${dbPath}-journal`, join(dir, 'logs')];
  return basename(dir) === '.splitdance' ? [...own, dir] : own;
}
