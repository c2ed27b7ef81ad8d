/** `run`'s plan: flags, job file and the batch's stored definition layered into one validated RunPlan, before anything is written. */
import { resolve } from 'node:path';
import { UsageError } from '../errors.js';
import { argsBatchName, checkBatchName, defaultBatchName, expandBatchName, stdinBatchName } from './batch-name.js';
import { checkArgsMode, checkGroupFile, checkNoOtherSource, groupsShape, lateOptions, plannedGroups, readableGroups, readOnce, Spools } from './command-line-items.js';
import { ARGS_SOURCE, checkArgGroups } from '../split/arg-groups.js';
import { findJobFile, skippedJobFileNote } from './job-file-path.js';
import { keepStoredOutputs } from './stored-outputs.js';
import { blockInput, checkBlockSize, checkItemsMode, pipes, refuseChunking, refuseItemPlaceholders } from './list-modes.js';
import { DEFAULT_SETTINGS, describeHandler, mergeSettings, settingsOf, storedDefinition, type JobSettings } from './job-definition.js';
import { inputFromFlags, invocationOf, layerInputs, printOf, type Invocation, type RawRunFlags, type RunInput } from './run-options.js';
import { sampled, type Sample } from '../split/sample.js';
import { sourceKind, splitSource, type SourceKind } from '../split/split-source.js';
import { isOneChunk } from '../split/chunk-file.js';
import { expandStages } from './stages.js';
import { checkTemplate } from '../template/exec-template.js';
import { ITEM_PLACEHOLDER } from '../template/placeholder.js';
import { checkPlaceholders } from '../template/placeholder-attempts.js';
import { templateWarnings } from './template-warnings.js';
import { checkGrouping, FIELD_WORDS, FLAG_WORDS, refuseGroupsLineByLine } from './group-options.js';
import { printable } from '../printable.js';
import { storePathAt, storePaths } from '../replaceable-path.js';
import { isPostgresUrl, logRoot } from '../store/open-store.js';
import type { TaskSpec } from '../store/task-store.js';
import { checkBusyCodes, checkFile, checkKeyedRate, checkSameSource, checkStages, outputProblemMessage, storeFiles, type StoredBatch } from './plan-checks.js';

/** Everything `run` decided before touching anything: what to split, how, into which batch. */
export interface RunPlan {
  /** The command line's own flags (output mode, --db, --dry-run); every setting is below, typed. */
  flags: RawRunFlags;
  source: string;
  kind: SourceKind;
  dbPath: string;
  batchName: string;
  /** The job file this run read, as the user named it (`./splitdance.json`, --job's text); null: none. */
  jobFile: string | null;
  existing: StoredBatch | undefined;
  /** Has a handler, or stages that each have theirs. */
  settings: JobSettings;
  /** Settings this command changes on an existing batch. */
  changed: string[];
  inv: Invocation;
  sample: Sample | null;
  rerunChanged: boolean;
  /** A file source that grew at its end since its batch split it: the batch's stored sizes change. */
  fileGrew: boolean;
  /** A fresh stream of the (sampled) task specs; `onSkip` hears of files that cannot be tasks. */
  split(onSkip?: (path: string, reason: string) => void): Iterable<TaskSpec>;
  /** The source will not be read again (its tasks are enqueued): a copy of stdin is removed now, not at exit. */
  doneReading(): void;
  notes: string[];
}

export interface PlanOptions {
  /** Run the batch's stored definition only: no job file is read (`retry-failed --run`). */
  storedOnly?: boolean;
  /** The flags, already parsed (`retry-failed --run` checks them before it opens the store): not parsed again. */
  input?: RunInput;
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
  const fromFlags = options.input ?? inputFromFlags(cliFlags, cwd);
  const handlerGiven = cliFlags.exec !== undefined || cliFlags.handler !== undefined;
  const jobFile = options.storedOnly ? { used: null, skipped: null } : findJobFile(cliFlags.job, cwd, handlerGiven);
  const jobPath = jobFile.used?.path ?? null;
  const fromFile: RunInput | null = jobPath ? (await import('./job-file.js')).readJobFile(jobPath) : null;
  const input = fromFile ? layerInputs(fromFile, fromFlags) : fromFlags; // flags win over the file
  if (sourceArg !== undefined && cliFlags.items !== undefined) {
    throw new UsageError(`give the list either as the source or as --items, not both (got ${sourceArg} and --items ${cliFlags.items})`);
  }
  const groups = plannedGroups(cliFlags.groups ?? [], cliFlags.argFile ?? [], cwd);
  if (groups.length) checkNoOtherSource(cliFlags, sourceArg);
  const sourceGiven = groups.length ? ARGS_SOURCE : (sourceArg ?? input.source);
  if (sourceGiven === undefined) {
    throw new UsageError(`no source: give one (\`splitdance run ./logs\`, \`--items list.txt\`, \`::: a b c\`, or \`run -\` for a list on stdin) or set "source" in ${jobPath ?? 'splitdance.json'}`);
  }
  // `retry-failed --run` runs what a batch of `:::` items stores: no groups are given again.
  const asArgs = groups.length > 0 || (options.storedOnly === true && sourceGiven === ARGS_SOURCE);
  // A list that can be read only once (`--items <(cmd)`, a FIFO) is read as stdin is: copied first, its batch named alike.
  const onceList = !asArgs && sourceGiven !== '-' && sourceArg === undefined && input.items === true && readOnce(resolve(cwd, sourceGiven));
  const stdin = sourceGiven === '-' || onceList;
  const source = asArgs ? ARGS_SOURCE : stdin ? '-' : resolve(cwd, sourceGiven);
  const inv = invocationOf(input);
  if (inv.print && cliFlags.json) printOf(true, false, false, true); // a job file's "print" meets --json: refused the same way
  // Stdin in blocks (`run - --pipe`) and the same command's list (`--items - --pipe`) are two batches: their keys differ.
  const work = describeHandler(input.settings.handler ?? null, input.settings.stages ?? [], { groups: false });
  const stdinWork = `${work}${sourceArg === '-' && pipes(input.settings.handler) ? ' (blocks)' : ''}`;
  const batchName =
    input.batch !== undefined
      ? expandBatchName(input.batch)
      : asArgs
        ? argsBatchName(cwd, work, groupsShape(groups))
        : stdin
          ? stdinBatchName(cwd, stdinWork)
          : defaultBatchName(source);
  if (batchName.trim() === '') throw new UsageError('--batch needs a non-empty name');
  checkBatchName(batchName);
  const existing = await findBatch(batchName);
  if (existing) checkSameSource(existing.source, source, batchName);
  const stored = existing ? settingsOf(storedDefinition(existing)) : DEFAULT_SETTINGS;
  // A batch's outputs stay where it put them, whichever folder the job file's output was relative to when it was created.
  if (existing && fromFile && fromFlags.settings.output === undefined) input.settings = keepStoredOutputs(input.settings, stored);
  const asItems = asArgs || stdin || (sourceArg === undefined && input.items === true) || stored.items !== null;
  const blocks = sourceArg === '-' && pipes(input.settings.handler ?? stored.handler);
  if (blocks) blockInput(input, cliFlags, existing !== undefined);
  else if (asItems) refuseChunking(input, cliFlags, sourceArg === '-');
  if (asItems && !input.settings.items && !stored.items) input.settings.items = { format: 'lines', keyField: null, colsep: null };
  if (!asItems && input.settings.items) {
    throw new UsageError('--jsonl, --key-field, --colsep, -0 and -d read a list of items: give it with --items FILE, or `run -` for stdin');
  }
  if (asArgs) checkArgsMode(input.settings.items, groups.some((g) => g.file !== undefined));
  const { settings, changed } = mergeSettings(stored, input.settings);
  checkBusyCodes(settings);
  if (existing) checkItemsMode(stored, settings, batchName);
  if (existing && blocks) checkBlockSize(stored, changed, batchName);
  // `retry-failed --run` runs what is stored: a list's items are in their tasks, so neither the list nor stdin is read.
  const storedItems = options.storedOnly === true && asItems && existing !== undefined;
  for (const g of groups) checkGroupFile(g);
  const spools = new Spools();
  const argGroups = storedItems ? [] : await readableGroups(groups, (path, shown) => spools.copy(path, shown));
  const spooled = !storedItems && stdin && !asArgs ? await spools.copy(onceList ? resolve(cwd, sourceGiven) : '-', sourceGiven) : null;
  const splitPath = storedItems ? null : (spooled ?? source);
  const kind = splitPath === null || asArgs ? 'items' : sourceKind(splitPath, asItems);
  checkStages(settings, stored, existing, batchName, input.settings.handler !== undefined);
  checkKeyedRate(settings, kind === 'items', input.settings.rateKey != null);
  if (!settings.handler && settings.stages.length === 0) {
    throw new UsageError(`no handler: give --exec 'COMMAND {}' or --handler ./module.js (a new batch has none stored)${lateOptions(cliFlags.groups ?? [])}`);
  }
  if (blocks) refuseItemPlaceholders(settings);
  // Where each template came from, for a refusal to name: the command line, the job file, or the batch as stored.
  const from = (flag: string, field: string, inFlags: boolean, inFile: boolean) =>
    inFlags ? flag : inFile ? `"${field}" of ${jobPath}` : `the stored ${flag} of batch ${batchName}`;
  if (settings.handler?.kind === 'exec') {
    const [inFlags, inFile] = [fromFlags.settings.handler?.kind === 'exec', fromFile?.settings.handler?.kind === 'exec'];
    const what = from('--exec', 'exec', inFlags, inFile);
    checkTemplate(settings.handler.template, [], settings.output !== null, kind === 'items', what);
    checkGrouping(settings.handler, settings.output !== null, what, !inFlags && inFile ? FIELD_WORDS : FLAG_WORDS);
  }
  for (const st of settings.stages) checkGrouping(st.handler, st.output !== undefined, `stage "${st.name}"'s exec`, FIELD_WORDS);
  if (inv.print?.lineBuffer) refuseGroupsLineByLine(settings);
  if (settings.output) checkPlaceholders(settings.output.template, from('--output', 'output', fromFlags.settings.output != null, fromFile?.settings.output != null));
  for (const st of settings.stages) if (st.output) checkPlaceholders(st.output.template, `stage "${st.name}"'s output`);
  const itemOutput = [settings.output, ...settings.stages.map((s) => s.output)].find((o) => o && ITEM_PLACEHOLDER.test(o.template));
  if (itemOutput && kind !== 'items') throw new UsageError(`--output ${JSON.stringify(itemOutput.template)} uses a placeholder of an item, and this source is not a list; give the list with --items FILE (or \`run -\`)`);
  if (input.finished && kind !== 'file') throw new UsageError(`--finished tells that a chunked file is complete; ${printable(sourceGiven)} is ${kind === 'items' ? 'a list' : 'a directory'}: leave --finished out`);
  const file = kind === 'file' ? checkFile(source, settings, stored, existing, changed, batchName, { rerunChanged: input.rerunChanged === true, finished: input.finished === true }) : null;
  const notes =
    existing && changed.length
      ? [`batch ${batchName}: ${changed.join(', ')} changed for the unfinished tasks (handler now ${describeHandler(settings.handler, settings.stages)})`]
      : [];
  if (jobFile.skipped !== null) notes.unshift(skippedJobFileNote(jobFile.skipped));
  if (file) notes.push(...file.notes);
  // A file that is one chunk: its command reading the whole file reads its own chunk, no warning.
  const warnKind = kind === 'file' && splitPath !== null && isOneChunk(splitPath, settings.lines ? { kind: 'lines', lines: settings.lines } : { kind: 'bytes', chunkSize: settings.chunkSize }) ? 'one-chunk file' : kind;
  if (settings.handler?.kind === 'exec') notes.push(...templateWarnings(settings.handler.template, warnKind, '--exec', settings.handler.pipe === true));
  for (const st of settings.stages) if (st.handler.kind === 'exec') notes.push(...templateWarnings(st.handler.template, warnKind, `stage ${JSON.stringify(st.name)}'s exec`, st.handler.pipe === true));
  const sample = input.sample ?? null;
  const plan: RunPlan = {
    flags: cliFlags,
    source,
    kind,
    dbPath: db,
    batchName,
    jobFile: jobFile.used?.shown ?? null,
    existing,
    settings,
    changed,
    inv,
    sample,
    rerunChanged: input.rerunChanged === true,
    fileGrew: file?.grew === true,
    notes,
    split(onSkip) {
      if (splitPath === null) return [];
      const make = () =>
        splitSource(splitPath, kind, {
          include: settings.include,
          exclude: settings.exclude,
          chunkSize: settings.chunkSize,
          lines: settings.lines,
          items: kind === 'items' ? { mode: settings.items!, shown: onceList ? sourceGiven : source, ...(asArgs ? { groups: argGroups } : {}) } : null,
          sizes: settings.fileState?.sizes ?? null,
          // The store's files, and --results' folder: results are never split as inputs of the next run.
          skip: [...storeFiles(db), ...(inv.results ? [inv.results] : [])],
          onSkip,
        });
      return expandStages(sample ? sampled(make, sample) : make(), settings);
    },
    doneReading: () => spools.remove(),
  };
  // An empty group, or linked groups of different lengths, is exit 2 before anything is written.
  if (asArgs && argGroups.length) checkArgGroups(argGroups, settings.items!);
  // A record that is not JSON, or lacks its --key-field, is exit 2 before anything is written.
  if (kind === 'items' && settings.items?.format === 'jsonl') for (const _ of plan.split());
  const store = storePaths(isPostgresUrl(db) ? null : db, logRoot(db, cwd));
  if (inv.metricsFile !== null) {
    const at = storePathAt(inv.metricsFile, store);
    if (at !== null) throw new UsageError(`--metrics-file ${printable(inv.metricsFile)} is the store's ${printable(at)}; writing it would destroy the store: give a path outside it`);
  }
  if (settings.output || settings.stages.some((s) => s.output)) {
    const { findOutputProblem } = await import('./planned-outputs.js');
    const problem = findOutputProblem(settings, () => plan.split(), batchName, store);
    if (problem) throw new UsageError(outputProblemMessage(problem, settings));
  }
  return plan;
}
