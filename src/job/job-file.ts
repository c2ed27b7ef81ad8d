import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { UsageError } from '../errors.js';
import type { RunFlags } from '../cli/commands/run-flags.js';
import { MAX_DURATION_TEXT, parseDuration, parseSize } from './units.js';
import { orderStages, type StageDefinition } from './stages.js';


const valid = (parse: (v: string, o: string) => unknown) => (v: string) => {
  try {
    parse(v, '');
    return true;
  } catch {
    return false;
  }
};
const duration = z.string().refine(valid(parseDuration), `expected a duration such as 500ms, 5s, 2m or 1h, at most ${MAX_DURATION_TEXT}`);
const size = z.union([z.number().int().positive(), z.string().refine(valid(parseSize), 'expected a size such as 64MiB')]);
const countOrPercent = z.union([z.number().int().positive(), z.string().regex(/^\d+(\.\d+)?%$/, 'expected a count or a percentage such as 10%')]);

/** The retry policy: of the job, and of a stage (over the job's). */
const policy = {
  retries: z.number().int().min(0).optional(),
  backoff: duration.optional(),
  backoffFactor: z.number().min(1).optional(),
  maxBackoff: duration.optional(),
  jitter: z.number().min(0).max(1).optional(),
  timeout: duration.optional(),
  permanentCodes: z.array(z.number().int().min(1).max(255)).optional(),
};

/** One stage of a per-item pipeline: its own handler and, optionally, its own policy. */
const StageSchema = z
  .object({
    name: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, 'expected a stage name of letters, digits, _ . and - (it starts every task key: name/item)')
      .describe('stage name; its tasks are keyed name/itemkey'),
    exec: z.string().min(1).describe("shell command per task; {inputs.STAGE.FIELD} reads a needed stage's result").optional(),
    handler: z.string().min(1).describe('a .js, .mjs or .ts module, relative to this file; task.inputs holds the needed results').optional(),
    needs: z.array(z.string()).describe('stages that must succeed for the same item first').optional(),
    ...policy,
  })
  .strict()
  .refine((s) => (s.exec === undefined) !== (s.handler === undefined), { message: 'give the stage exactly one of "exec" or "handler"' });

/** `splitdance.json`: every `run` option, camelCase, plus stages. Unknown fields are errors. */
export const JobFileSchema = z
  .object({
    $schema: z.string().optional(),
    source: z.string().min(1).describe('directory or file to split, relative to this file').optional(),
    batch: z.string().min(1).describe("batch name; {date} expands to YYYY-MM-DD").optional(),
    exec: z.string().min(1).describe("shell command per task, e.g. 'gzip -k {}'").optional(),
    handler: z.string().min(1).describe('a .js, .mjs or .ts module, relative to this file').optional(),
    include: z.array(z.string()).optional(),
    exclude: z.array(z.string()).optional(),
    chunkSize: size.optional(),
    lines: z.number().int().positive().optional(),
    concurrency: countOrPercent.optional(),
    ...policy,
    maxFailures: countOrPercent.optional(),
    maxRuntime: duration.optional(),
    grace: duration.optional(),
    noWait: z.boolean().optional(),
    maxTasksPerWorker: z.number().int().positive().optional(),
    maxWorkerMemory: size.optional(),
    stages: z.array(StageSchema).min(1).describe('a per-item pipeline: one task per stage and item').optional(),
  })
  .strict();

export type JobFile = z.infer<typeof JobFileSchema>;

export function jobFileJsonSchema(): unknown {
  return z.toJSONSchema(JobFileSchema);
}

/** The job file to read: `--job FILE`, else `./splitdance.json` when it exists. */
/** Reads and validates a job file into `run` flags and stages (paths made absolute against the file's folder). */
export function readJobFile(path: string): { flags: RunFlags; source?: string; stages?: StageDefinition[] } {
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new UsageError(`job file ${path} is not valid JSON: ${(err as Error).message}`);
  }
  const parsed = JobFileSchema.safeParse(data, { reportInput: true });
  if (!parsed.success) throw new UsageError(`job file ${path}: ${describeIssues(parsed.error.issues)}`);
  const j = parsed.data;
  const here = dirname(path);
  const abs = (p: string) => (isAbsolute(p) ? p : resolve(here, p));
  const str = (v: number | string | undefined) => (v === undefined ? undefined : String(v));
  if (j.stages && (j.exec !== undefined || j.handler !== undefined)) {
    throw new UsageError(`job file ${path}: with "stages", each stage has its own "exec" or "handler"; remove the top-level one`);
  }
  let stages: StageDefinition[] | undefined;
  try {
    stages = j.stages && orderStages(j.stages.map((s) => stageOf(s, abs)));
  } catch (err) {
    throw new UsageError(`job file ${path}: ${(err as Error).message}`);
  }
  return {
    source: j.source === undefined ? undefined : abs(j.source),
    stages,
    flags: {
      batch: j.batch,
      exec: j.exec,
      handler: j.handler === undefined ? undefined : abs(j.handler),
      include: j.include,
      exclude: j.exclude,
      chunkSize: str(j.chunkSize),
      lines: str(j.lines),
      concurrency: str(j.concurrency),
      retries: str(j.retries),
      backoff: j.backoff,
      backoffFactor: str(j.backoffFactor),
      maxBackoff: j.maxBackoff,
      jitter: str(j.jitter),
      timeout: j.timeout,
      permanentCodes: j.permanentCodes?.join(','),
      maxFailures: str(j.maxFailures),
      maxRuntime: j.maxRuntime,
      grace: j.grace,
      wait: j.noWait === undefined ? undefined : !j.noWait,
      maxTasksPerWorker: str(j.maxTasksPerWorker),
      maxWorkerMemory: str(j.maxWorkerMemory),
    },
  };
}

function stageOf(s: z.infer<typeof StageSchema>, abs: (p: string) => string): StageDefinition {
  const def: StageDefinition = {
    name: s.name,
    needs: [...new Set(s.needs ?? [])], // a need named twice is one need
    handler: s.exec !== undefined ? { kind: 'exec', template: s.exec } : { kind: 'module', path: abs(s.handler!) },
    retries: s.retries,
    backoffMs: s.backoff === undefined ? undefined : parseDuration(s.backoff, 'backoff'),
    backoffFactor: s.backoffFactor,
    maxBackoffMs: s.maxBackoff === undefined ? undefined : parseDuration(s.maxBackoff, 'maxBackoff'),
    jitter: s.jitter,
    timeoutMs: s.timeout === undefined ? undefined : parseDuration(s.timeout, 'timeout'),
    permanentCodes: s.permanentCodes,
  };
  // Unset fields stay out of the stored definition, so they follow the job's.
  return Object.fromEntries(Object.entries(def).filter(([, v]) => v !== undefined)) as unknown as StageDefinition;
}

const FIELDS = [...Object.keys(JobFileSchema.shape), ...Object.keys(StageSchema.shape)];

function describeIssues(issues: z.core.$ZodIssue[]): string {
  return issues
    .map((issue) => {
      if (issue.code === 'unrecognized_keys') {
        return issue.keys.map((k) => `unknown field "${k}"${suggest(k)}`).join('; ');
      }
      const field = issue.path.join('.') || '(top level)';
      const received = 'input' in issue && issue.input !== undefined ? ` (received ${JSON.stringify(issue.input)})` : '';
      return `field "${field}": ${issue.message.replace(/^Invalid input: /, '')}${received}`;
    })
    .join('; ');
}

/** "did you mean" for a misspelt field: the known field with the smallest edit distance. */
function suggest(key: string): string {
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
