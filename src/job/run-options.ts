import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { UsageError } from '../errors.js';
import { parseSample, type Sample } from '../split/sample.js';
import { checkOutputTemplate } from '../output/output-path.js';
import { checkTemplate } from '../template/exec-template.js';
import { checkMetricsPath } from '../status/metrics-file.js';
import { checkResultsDir } from '../output/results-path.js';
import type { JobSettings } from './job-definition.js';
import type { ItemsMode } from '../split/items.js';
import { orderOf, parsePriority } from '../split/task-order.js';
import { parseRate } from './rate.js';
import { checkHook } from '../template/hook-command.js';
import type { RawArgGroup } from './command-line-items.js';
import { parseDelimiter } from './command-line-items.js';
import { FLAG_WORDS, groupedHandler, MAX_GROUP_ITEMS } from './group-options.js';
import { parseCount, parseCountOrShare, parseDuration, parseFraction, parseNumber, parseSize, type CountOrShare } from './units.js';
import { atLeast, checkColsep, checkRegex, definedOnly, given, MAX_BACKOFF_FACTOR, MAX_RETRIES, MIN_DURATION_MS, nonEmpty, parseBusyCodes, parseCodes, parseConcurrency, positive } from './option-checks.js';

/**
 * The options pipeline of `run` (and `worker`): flags and the job file are each parsed once,
 * here and in job-file.ts, into one typed `RunInput`; the two are layered (flags win), then
 * over the batch's stored definition (plan-run.ts). Nothing later parses text again, and
 * nothing is written before all of it has been validated.
 */

/** `run`'s flags as the command line gives them: text, before validation. */
export interface RawRunFlags {
  job?: string;
  dryRun?: boolean;
  sample?: string;
  rerunChanged?: boolean;
  finished?: boolean;
  db?: string;
  /** Owners whose SQLite stores are used as one's own (docs/trust-model.md); never stored on the batch. */
  trustStoreOwner?: string[];
  batch?: string;
  exec?: string;
  handler?: string;
  concurrency?: string;
  retries?: string;
  backoff?: string;
  backoffFactor?: string;
  maxBackoff?: string;
  jitter?: string;
  timeout?: string;
  permanentCodes?: string;
  /** `--busy-codes 75,…|none` and `--max-busy DURATION`: "busy, try later" (SPEC §10). */
  busyCodes?: string;
  maxBusy?: string;
  /** `--rate N/s|N/m|N/h` (rate.ts). */
  rate?: string;
  /** `--on-complete CMD`, `--on-failure CMD` (`none`: no such hook). */
  onComplete?: string;
  onFailure?: string;
  /** `--rate-key TEMPLATE`: the rate per rendered key (`none`: the batch's again). */
  rateKey?: string;
  /** `--adaptive`: AIMD on the running attempts (and the rate). */
  adaptive?: boolean;
  output?: string;
  force?: boolean;
  print?: boolean;
  tag?: boolean;
  keepOrder?: boolean;
  results?: string;
  lineBuffer?: boolean;
  permanentErrors?: string[];
  heartbeatTimeout?: string;
  retryQuiet?: boolean;
  /** `--order key|size|history|random` and `--priority 'GLOB=N'` (repeatable): the claim order (task-order.ts). */
  order?: string;
  /** GNU parallel's `--shuf`: `--order random`. */
  shuf?: boolean;
  priority?: string[];
  include?: string[];
  exclude?: string[];
  chunkSize?: string;
  /** GNU parallel's word for --chunk-size: the size of a block of stdin (`run - --pipe`), or of a file's chunks. */
  block?: string;
  lines?: string;
  items?: string;
  jsonl?: boolean;
  keyField?: string;
  colsep?: string;
  /** `-0` / `--null`: the list's items end with a NUL. */
  null?: boolean;
  /** `-d DELIM`: the list's items end with DELIM (escapes as GNU parallel's). */
  delimiter?: string;
  /** Items given on the command line after `:::`, `::::`, `:::+`, `::::+` (split off argv before commander). */
  groups?: RawArgGroup[];
  /** `-a FILE` / `--arg-file FILE` (repeatable): as `:::: FILE`. */
  argFile?: string[];
  pipe?: boolean;
  /** `-n N` / `--max-args N`, `-N N` / `--max-replace-args N`, `-X` / `--xargs`, `-m`, `--max-items N`: many items per command (group-options.ts). */
  maxArgs?: string;
  maxReplaceArgs?: string;
  xargs?: boolean;
  m?: boolean;
  maxItems?: string;
  wait?: boolean;
  maxFailures?: string;
  maxRuntime?: string;
  grace?: string;
  loadTimeout?: string;
  maxTasksPerWorker?: string;
  maxWorkerMemory?: string;
  progressInterval?: string;
  metricsFile?: string;
  historyWarn?: string;
  lease?: string;
  json?: boolean;
  quiet?: boolean;
  verbose?: boolean;
  color?: boolean | 'always' | 'never' | 'auto';
}

/** Settings of this invocation only; not stored on the batch. */
export interface Invocation {
  concurrency: number;
  noWait: boolean;
  maxFailures: CountOrShare | null;
  maxRuntimeMs: number | null;
  graceMs: number;
  /** A handler module whose import has not settled after this long fails the start (exit 2). */
  loadTimeoutMs: number;
  maxTasksPerWorker: number | null;
  maxWorkerMemory: number | null;
  progressIntervalMs: number;
  /** Where the batch's Prometheus metrics are kept (absolute), or null. */
  metricsFile: string | null;
  leaseMs: number;
  /** Warn when the store holds more attempt rows than this. */
  historyWarn: number;
  /** Run tasks whose declared output is up to date anyway. */
  force: boolean;
  /**
   * `--print`: the stdout (and stderr) of the attempt that ends each task on the run's own,
   * whole, when it ends; `tag`: each line after its key and a tab; `keepOrder`: in claim order;
   * `lineBuffer`: line by line as they come, of every attempt (docs/output-and-logs.md).
   */
  print: { tag: boolean; keepOrder: boolean; lineBuffer: boolean } | null;
  /** `--results DIR` (absolute): each finished task's stdout, stderr and seq in DIR/1/KEY/ (run/attempt-results.ts). */
  results: string | null;
}

const DEFAULT_INVOCATION: Invocation = {
  concurrency: availableParallelism(),
  noWait: false,
  maxFailures: null,
  maxRuntimeMs: null,
  graceMs: 10_000,
  loadTimeoutMs: 60_000,
  maxTasksPerWorker: null,
  maxWorkerMemory: null,
  progressIntervalMs: 10_000,
  metricsFile: null,
  leaseMs: 30_000,
  historyWarn: 1_000_000,
  force: false,
  print: null,
  results: null,
};

/** What one source of options (the command line, or the job file) gives, typed; absent = not given. */
export interface RunInput {
  source?: string;
  /** The source is a list of items (`--items FILE`, job field "items"). */
  items?: true;
  /** As given: `{date}` is expanded when the plan is made. */
  batch?: string;
  settings: Partial<JobSettings>;
  inv: Partial<Invocation>;
  sample?: Sample;
  rerunChanged?: boolean;
  /** A file source is finished: its last line is taken without a newline (file-growth.ts). Per run, never stored. */
  finished?: boolean;
}

/** Parses and validates every `run`/`worker` flag that was given; throws a UsageError naming the flag. */
export function inputFromFlags(f: RawRunFlags, cwd: string): RunInput {
  if (f.exec !== undefined && f.handler !== undefined) throw new UsageError('give either --exec or --handler, not both');
  if (f.block !== undefined && f.chunkSize !== undefined) throw new UsageError('--block and --chunk-size are one setting (the size of a block or a chunk): give one of them');
  if (f.lines !== undefined && (f.chunkSize !== undefined || f.block !== undefined)) throw new UsageError(`give either --lines or ${f.block !== undefined ? '--block' : '--chunk-size'}, not both`);
  if (f.output !== undefined) checkOutputTemplate(f.output, []);
  if (f.pipe && f.exec === undefined) throw new UsageError("--pipe goes with --exec (a module handler reads its chunk or item with task.read()); give --exec 'COMMAND' --pipe");
  // Whether {out} has an output to name is checked once the job file and the stored batch are layered in (plan-run.ts).
  if (f.exec !== undefined) checkTemplate(f.exec);
  for (const [flag, globs] of [['--include', f.include], ['--exclude', f.exclude]] as const) {
    if (globs?.some((g) => g.trim() === '')) throw new UsageError(`${flag} is empty; give a glob such as '*.log'`);
  }
  const settings: Partial<JobSettings> = {
    handler: groupedHandler(
      f.exec !== undefined ? { kind: 'exec', template: f.exec, ...(f.pipe ? { pipe: true } : {}) } : f.handler !== undefined ? { kind: 'module', path: resolve(cwd, f.handler) } : undefined,
      {
        n: given(f.maxArgs, (v) => parseCount(v, '-n/--max-args', { min: 1, max: MAX_GROUP_ITEMS })),
        N: given(f.maxReplaceArgs, (v) => parseCount(v, '-N/--max-replace-args', { min: 1, max: MAX_GROUP_ITEMS })),
        X: f.xargs,
        m: f.m,
        maxItems: given(f.maxItems, (v) => parseCount(v, '--max-items', { min: 1, max: MAX_GROUP_ITEMS })),
      },
      FLAG_WORDS,
    ),
    retries: given(f.retries, (v) => parseCount(v, '--retries', { max: MAX_RETRIES })),
    backoffMs: given(f.backoff, (v) => parseDuration(v, '--backoff')),
    backoffFactor: given(f.backoffFactor, (v) => parseNumber(v, '--backoff-factor', { min: 1, max: MAX_BACKOFF_FACTOR })),
    maxBackoffMs: given(f.maxBackoff, (v) => parseDuration(v, '--max-backoff')),
    jitter: given(f.jitter, (v) => parseFraction(v, '--jitter')),
    timeoutMs: given(f.timeout, (v) => atLeast(positive(parseDuration(v, '--timeout'), '--timeout'), MIN_DURATION_MS.timeout, '--timeout')),
    permanentCodes: given(f.permanentCodes, parseCodes),
    busyCodes: given(f.busyCodes, parseBusyCodes),
    maxBusyMs: given(f.maxBusy, (v) => positive(parseDuration(v, '--max-busy'), '--max-busy')),
    rate: given(f.rate, (v) => parseRate(v, '--rate')),
    rateKey: given(f.rateKey, (v) => (v === 'none' ? null : v)),
    onComplete: given(f.onComplete, (v) => (v === 'none' ? null : checkHook(v, '--on-complete'))),
    onFailure: given(f.onFailure, (v) => (v === 'none' ? null : checkHook(v, '--on-failure'))),
    adaptive: f.adaptive === true ? true : undefined,
    output: f.output === undefined ? undefined : { template: f.output, base: cwd },
    permanentErrors: f.permanentErrors?.length ? f.permanentErrors.map((r) => checkRegex(r, '--permanent-errors')) : undefined,
    heartbeatTimeoutMs: given(f.heartbeatTimeout, (v) => positive(parseDuration(v, '--heartbeat-timeout'), '--heartbeat-timeout')),
    retryQuiet: f.retryQuiet === true ? true : undefined,
    order: orderOf(f.order, f.shuf),
    priority: f.priority?.length ? f.priority.map((p) => parsePriority(p, '--priority')) : undefined,
    include: f.include?.length ? f.include : undefined,
    exclude: f.exclude?.length ? f.exclude : undefined,
    chunkSize: f.block !== undefined ? parseSize(f.block, '--block') : given(f.chunkSize, (v) => parseSize(v, '--chunk-size')),
    lines: given(f.lines, (v) => parseCount(v, '--lines', { min: 1 })),
    items: itemsFromFlags(f),
  };
  const inv: Partial<Invocation> = {
    concurrency: given(f.concurrency, parseConcurrency),
    noWait: f.wait === false ? true : undefined,
    maxFailures: given(f.maxFailures, (v) => parseCountOrShare(v, '--max-failures')),
    maxRuntimeMs: given(f.maxRuntime, (v) => positive(parseDuration(v, '--max-runtime'), '--max-runtime')),
    graceMs: given(f.grace, (v) => parseDuration(v, '--grace')),
    loadTimeoutMs: given(f.loadTimeout, (v) => positive(parseDuration(v, '--load-timeout'), '--load-timeout')),
    maxTasksPerWorker: given(f.maxTasksPerWorker, (v) => parseCount(v, '--max-tasks-per-worker', { min: 1 })),
    maxWorkerMemory: given(f.maxWorkerMemory, (v) => parseSize(v, '--max-worker-memory')),
    progressIntervalMs: given(f.progressInterval, (v) => atLeast(positive(parseDuration(v, '--progress-interval'), '--progress-interval'), MIN_DURATION_MS.progressInterval, '--progress-interval')),
    metricsFile: given(f.metricsFile, (v) => checkMetricsPath(resolve(cwd, v), '--metrics-file')),
    leaseMs: given(f.lease, (v) => atLeast(positive(parseDuration(v, '--lease'), '--lease'), MIN_DURATION_MS.lease, '--lease')),
    historyWarn: given(f.historyWarn, (v) => parseCount(v, '--history-warn', { min: 1 })),
    force: f.force === true ? true : undefined,
    print: printOf(f.print, f.tag, f.keepOrder, f.json, f.lineBuffer),
    results: given(f.results, (v) => checkResultsDir(resolve(cwd, nonEmpty(v, '--results')), '--results')),
  };
  if (f.batch !== undefined && f.batch.trim() === '') throw new UsageError('--batch needs a non-empty name');
  return {
    source: f.items,
    items: f.items !== undefined ? true : undefined,
    batch: f.batch,
    settings: definedOnly(settings),
    inv: definedOnly(inv),
    sample: given(f.sample, (v) => parseSample(v)),
    rerunChanged: f.rerunChanged === true ? true : undefined,
    finished: f.finished === true ? true : undefined,
  };
}

/**
 * How a list is read (`--items`, `-`, `--jsonl`, `--key-field`, `--colsep`), when any of it is
 * given; whether the source is a list at all is decided with the source (plan-run.ts).
 */
function itemsFromFlags(f: RawRunFlags): ItemsMode | undefined {
  if (f.items !== undefined && f.items.trim() === '') throw new UsageError("--items needs a list file, or - for stdin (e.g. --items urls.txt)");
  if (f.keyField !== undefined && f.keyField === '') throw new UsageError('--key-field is empty; give the name of a field of every record, e.g. --key-field id');
  if (f.colsep !== undefined) checkColsep(f.colsep, '--colsep');
  if (f.null && f.delimiter !== undefined) throw new UsageError('give either -0 (--null) or -d DELIM, not both: -0 is -d \\0');
  const delimiter = f.null ? '\0' : f.delimiter !== undefined ? parseDelimiter(f.delimiter) : undefined;
  if (f.items === undefined && !f.jsonl && f.keyField === undefined && f.colsep === undefined && delimiter === undefined) return undefined;
  const mode = itemsMode(f.items, f.jsonl, f.keyField, f.colsep);
  if (delimiter === undefined) return mode;
  if (mode.format === 'jsonl') {
    throw new UsageError(`${f.null ? '-0' : '-d'} splits a list into items on ${f.null ? 'NULs' : 'a delimiter'}; JSON Lines are one record per line: leave out ${f.null ? '-0' : '-d'}, or --jsonl/--key-field (and a .jsonl name) to read plain items`);
  }
  return { ...mode, delimiter };
}

/** A list is JSON Lines when asked (`--jsonl`, or by `--key-field`) or by its name (`.jsonl`, `.ndjson`). */
export function itemsMode(list: string | undefined, jsonl: boolean | undefined, keyField: string | undefined, colsep: string | undefined): ItemsMode {
  const format = jsonl || keyField !== undefined || /\.(jsonl|ndjson)$/i.test(list ?? '') ? 'jsonl' : 'lines';
  return { format, keyField: keyField ?? null, colsep: colsep ?? null };
}

/**
 * `--print` with its modifiers. `--tag` and `--keep-order` say how to print, so alone they
 * imply it. With `--json` the events own stdout: a command's output there would make it no
 * longer NDJSON, so the pair is refused (the output stays in `logs` and the events' tails).
 */
export function printOf(
  print: boolean | undefined,
  tag: boolean | undefined,
  keepOrder: boolean | undefined,
  json: boolean | undefined,
  lineBuffer?: boolean,
): Invocation['print'] | undefined {
  if (!print && !tag && !keepOrder && !lineBuffer) return undefined;
  if (json) throw new UsageError('--print puts the commands\' output on stdout, where --json puts its events: give one of them (`splitdance logs --batch B` prints the output afterwards)');
  return { tag: tag === true, keepOrder: keepOrder === true, lineBuffer: lineBuffer === true };
}

/** Layers `over` on `base`: a field `over` gives wins, whatever `base` said. */
export function layerInputs(base: RunInput, over: RunInput): RunInput {
  return {
    source: over.source ?? base.source,
    // A source given here decides its own kind: a job file's list does not make a flag's folder one.
    items: over.source !== undefined ? over.items : base.items,
    batch: over.batch ?? base.batch,
    settings: { ...base.settings, ...definedOnly(over.settings) },
    inv: { ...base.inv, ...definedOnly(over.inv) },
    sample: over.sample ?? base.sample,
    rerunChanged: over.rerunChanged ?? base.rerunChanged,
    finished: over.finished ?? base.finished,
  };
}

export function invocationOf(input: RunInput): Invocation {
  return { ...DEFAULT_INVOCATION, ...definedOnly(input.inv) };
}

