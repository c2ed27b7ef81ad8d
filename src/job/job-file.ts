/** A job file read: its JSON checked for depth, then the schema, into a RunInput whose paths are absolute; a misspelt field's did-you-mean. */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import type { z } from 'zod';
import { UsageError } from '../errors.js';
import { checkOutputTemplate } from '../output/output-path.js';
import { checkHook } from '../template/hook-command.js';
import { checkMetricsPath } from '../status/metrics-file.js';
import { checkResultsDir } from '../output/results-path.js';
import { itemsMode, printOf, type RunInput } from './run-options.js';
import { definedOnly } from './option-checks.js';
import { JobFileSchema, StageSchema } from './job-file-schema.js';
import type { StageDefinition } from './job-definition.js';
import { orderStages } from './stages.js';
import { FIELD_WORDS, groupedHandler } from './group-options.js';
import type { HandlerSpec } from '../worker/protocol.js';

/** No field of a job file nests deeper (stages' fields are at depth 3); the schema's checks recurse. */
const MAX_DEPTH = 64;

/**
 * Refuses a value nested deeper than MAX_DEPTH, naming its field, before the schema walks it:
 * validation recurses, and 5,000 levels ended in "Maximum call stack size exceeded". Walked
 * with an explicit stack, so any depth JSON.parse accepts is measured safely.
 */
function checkDepth(data: unknown, path: string): void {
  const stack: { value: unknown; at: string[] }[] = [{ value: data, at: [] }];
  while (stack.length) {
    const { value, at } = stack.pop()!;
    if (value === null || typeof value !== 'object') continue;
    if (at.length >= MAX_DEPTH) {
      throw new UsageError(`job file ${path}: field "${at.slice(0, 3).join('.')}${at.length > 3 ? '.…' : ''}" is nested more than ${MAX_DEPTH} levels deep; no field of a job file nests like that`);
    }
    for (const [k, v] of Object.entries(value)) stack.push({ value: v, at: [...at, k] });
  }
}

/**
 * Reads and validates a job file into a typed RunInput. Every path is made absolute against
 * the file's folder, and a declared output's relative part is rendered there (its `base`), so
 * a job file means the same from any working folder.
 */
export function readJobFile(path: string): RunInput {
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new UsageError(`job file ${path} is not valid JSON: ${(err as Error).message}`);
  }
  checkDepth(data, path);
  const parsed = JobFileSchema.safeParse(data, { reportInput: true });
  if (!parsed.success) throw new UsageError(`job file ${path}: ${describeIssues(parsed.error.issues)}`);
  const j = parsed.data;
  const here = dirname(path);
  const abs = (p: string) => (isAbsolute(p) ? p : resolve(here, p));
  if (j.stages && (j.exec !== undefined || j.handler !== undefined)) {
    throw new UsageError(`job file ${path}: with "stages", each stage has its own "exec" or "handler"; remove the top-level one`);
  }
  if (j.stages && j.output !== undefined) {
    throw new UsageError(`job file ${path}: with "stages", each stage declares its own "output"; move the top-level one into a stage`);
  }
  // Relative to the job file's folder, like every path in it (--output is relative to the working folder).
  const outputOf = (template: string | undefined, needs: string[], field: string) => {
    if (template === undefined) return undefined;
    try {
      checkOutputTemplate(template, needs, `field "${field}"`);
    } catch (err) {
      throw new UsageError(`job file ${path}: ${(err as Error).message}`);
    }
    return { template, base: here };
  };
  if (j.source !== undefined && j.items !== undefined) throw new UsageError(`job file ${path}: give either "source" or "items", not both`);
  if (j.pipe && j.exec === undefined) throw new UsageError(`job file ${path}: "pipe" goes with "exec" (a module handler reads its chunk or item with task.read())`);
  if (j.lines !== undefined && j.chunkSize !== undefined) throw new UsageError(`job file ${path}: give either "lines" or "chunkSize", not both`);
  if (j.batch !== undefined && j.batch.trim() === '') throw new UsageError(`job file ${path}: field "batch" needs a non-empty name`);
  let stages: StageDefinition[] | undefined;
  try {
    stages = j.stages && orderStages(j.stages.map((s, i) => stageOf(s, abs, outputOf(s.output, s.needs ?? [], `stages.${i}.output`))));
  } catch (err) {
    throw new UsageError(`job file ${path}: ${(err as Error).message}`);
  }
  return {
    source: j.items !== undefined ? (j.items === '-' ? '-' : abs(j.items)) : j.source === undefined ? undefined : abs(j.source),
    items: j.items !== undefined ? true : undefined,
    batch: j.batch,
    sample: j.sample,
    rerunChanged: j.rerunChanged,
    settings: definedOnly({
      handler: handlerOf(j, abs, `job file ${path}: `),
      stages,
      include: j.include,
      exclude: j.exclude,
      chunkSize: j.chunkSize,
      lines: j.lines,
      items: j.items !== undefined || j.jsonl !== undefined || j.keyField !== undefined || j.colsep !== undefined ? itemsMode(j.items, j.jsonl, j.keyField, j.colsep) : undefined,
      retries: j.retries,
      backoffMs: j.backoff,
      backoffFactor: j.backoffFactor,
      maxBackoffMs: j.maxBackoff,
      jitter: j.jitter,
      timeoutMs: j.timeout,
      permanentCodes: j.permanentCodes,
      output: outputOf(j.output, [], 'output'),
      permanentErrors: j.permanentErrors,
      heartbeatTimeoutMs: j.heartbeatTimeout,
      retryQuiet: j.retryQuiet,
      busyCodes: j.busyCodes,
      maxBusyMs: j.maxBusy,
      rate: j.rate,
      rateKey: j.rateKey === 'none' ? null : j.rateKey,
      onComplete: hookField(j.onComplete, `"onComplete" of ${path}`),
      onFailure: hookField(j.onFailure, `"onFailure" of ${path}`),
      adaptive: j.adaptive,
      order: j.order,
      priority: j.priority,
    }),
    inv: definedOnly({
      concurrency: j.concurrency,
      noWait: j.noWait,
      maxFailures: j.maxFailures,
      maxRuntimeMs: j.maxRuntime,
      graceMs: j.grace,
      loadTimeoutMs: j.loadTimeout,
      maxTasksPerWorker: j.maxTasksPerWorker,
      maxWorkerMemory: j.maxWorkerMemory,
      progressIntervalMs: j.progressInterval,
      metricsFile: j.metricsFile === undefined ? undefined : metricsPath(abs(j.metricsFile), path),
      leaseMs: j.lease,
      historyWarn: j.historyWarn,
      print: printOf(j.print, j.tag, j.keepOrder, false, j.lineBuffer),
      results: j.results === undefined ? undefined : resultsDir(abs(j.results), path),
    }),
  };
}

function resultsDir(dir: string, jobFile: string): string {
  try {
    return checkResultsDir(dir, 'field "results"');
  } catch (err) {
    throw new UsageError(`job file ${jobFile}: ${(err as Error).message}`);
  }
}

function metricsPath(file: string, jobFile: string): string {
  try {
    return checkMetricsPath(file, 'field "metricsFile"');
  } catch (err) {
    throw new UsageError(`job file ${jobFile}: ${(err as Error).message}`);
  }
}

function stageOf(s: z.output<typeof StageSchema>, abs: (p: string) => string, output: StageDefinition['output']): StageDefinition {
  if (s.pipe && s.exec === undefined) throw new UsageError(`stage "${s.name}": "pipe" goes with "exec" (a module handler reads its chunk or item with task.read())`);
  const def: StageDefinition = {
    name: s.name,
    needs: [...new Set(s.needs ?? [])], // a need named twice is one need
    handler: handlerOf(s, abs, `stage "${s.name}": `)!,
    retries: s.retries,
    backoffMs: s.backoff,
    backoffFactor: s.backoffFactor,
    maxBackoffMs: s.maxBackoff,
    jitter: s.jitter,
    timeoutMs: s.timeout,
    permanentCodes: s.permanentCodes,
    output,
    permanentErrors: s.permanentErrors,
    heartbeatTimeoutMs: s.heartbeatTimeout,
    retryQuiet: s.retryQuiet,
  };
  // Unset fields stay out of the stored definition, so they follow the job's.
  return definedOnly(def) as StageDefinition;
}

/** The handler of the job or of a stage: its exec (with "pipe") or module, and its grouping fields. */
function handlerOf(
  j: { exec?: string; handler?: string; pipe?: boolean; maxArgs?: number; maxReplaceArgs?: number; xargs?: boolean; multiple?: boolean; maxItems?: number },
  abs: (p: string) => string,
  where: string,
): HandlerSpec | undefined {
  const plain: HandlerSpec | undefined =
    j.exec !== undefined ? { kind: 'exec', template: j.exec, ...(j.pipe ? { pipe: true as const } : {}) } : j.handler !== undefined ? { kind: 'module', path: abs(j.handler) } : undefined;
  try {
    return groupedHandler(plain, { n: j.maxArgs, N: j.maxReplaceArgs, X: j.xargs, m: j.multiple, maxItems: j.maxItems }, FIELD_WORDS);
  } catch (err) {
    throw new UsageError(`${where}${(err as Error).message}`);
  }
}

const FIELDS = [...Object.keys(JobFileSchema.shape), ...Object.keys(StageSchema.shape)];

function describeIssues(issues: z.core.$ZodIssue[]): string {
  return issues
    .map((issue) => {
      if (issue.code === 'unrecognized_keys') {
        return issue.keys.map((k) => `unknown field "${k}"${didYouMean(k)}`).join('; ');
      }
      const field = issue.path.join('.') || '(top level)';
      const received = 'input' in issue && issue.input !== undefined ? ` (received ${JSON.stringify(issue.input)})` : '';
      return `field "${field}": ${issue.message.replace(/^Invalid input: /, '')}${received}`;
    })
    .join('; ');
}

/** "did you mean" for a misspelt field: the known field with the smallest edit distance. */
function didYouMean(key: string): string {
  let best = '';
  let bestDistance = Infinity;
  for (const f of FIELDS) {
    const d = distance(key.toLowerCase(), f.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [f, d];
  }
  return bestDistance <= Math.max(2, Math.floor(key.length / 3)) ? ` (did you mean "${best}"?)` : '';
}

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length]!;
}

/** A hook field: absent, `none` (no hook, as the flag's), or a command checkHook takes. */
function hookField(value: string | undefined, what: string): string | null | undefined {
  if (value === undefined) return undefined;
  return value === 'none' ? null : checkHook(value, what);
}
