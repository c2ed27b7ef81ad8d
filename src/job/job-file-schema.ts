/** The job file's schema (zod): every field, parsed once into its typed value, and its JSON Schema. */
import { z } from 'zod';
import { UsageError } from '../errors.js';
import { linearRegExp } from '../linear-regex.js';
import { parseSample } from '../split/sample.js';
import { ORDERS, parsePriority } from '../split/task-order.js';
import { parseRate } from './rate.js';
import { atLeast, MAX_BACKOFF_FACTOR, MAX_CONCURRENCY, MAX_RETRIES, MIN_DURATION_MS, parseConcurrency } from './option-checks.js';
import { formatMs, parseCountOrShare, parseDuration, parseSize } from './units.js';
import { MAX_GROUP_ITEMS } from './group-options.js';

/**
 * A field parsed once, by the same function as its flag: the schema's output is the typed
 * value (milliseconds, bytes, …), never text to be parsed again.
 */
const parsedBy = <T>(parse: (v: string, option: string) => T) => (v: string, ctx: z.core.$RefinementCtx<string>) => {
  try {
    return parse(v, '');
  } catch (err) {
    // The parser's message without its flag name and echo of the value (the issue reports
    // what arrived): `expected a duration such as 500ms, 5s, 2m or 1h`.
    const message = (err as Error).message.trim().replace(/^expects/, 'expected').replace(/; got "[\s\S]*"$/, '');
    ctx.addIssue({ code: 'custom', message, input: v });
    return z.NEVER;
  }
};
const duration = z.string().describe('a duration such as 500ms, 5s, 2m or 1h').transform(parsedBy(parseDuration));
/** A duration that must be longer than 0 (a timeout of 0 would kill every attempt at once). */
const longerThanZero = z
  .string()
  .describe('a duration such as 500ms, 5s, 2m or 1h, longer than 0')
  .transform(parsedBy((v, o) => {
    const ms = parseDuration(v, o);
    if (ms <= 0) throw new UsageError(`expects a duration longer than 0; got "${v}"`);
    return ms;
  }));
/** A duration of at least `min` ms (MIN_DURATION_MS: what the design can honour). */
const atLeastMs = (min: number) =>
  z
    .string()
    .describe(`a duration such as 500ms, 5s, 2m or 1h, at least ${formatMs(min)}`)
    .transform(parsedBy((v, o) => atLeast(parseDuration(v, o), min, 'it')));
const size = z.union([z.number().int().positive().max(Number.MAX_SAFE_INTEGER), z.string().transform(parsedBy(parseSize))]);
const countOrShare = z.union([z.number().int().positive().max(Number.MAX_SAFE_INTEGER), z.string()]).transform((v, ctx) =>
  parsedBy(parseCountOrShare)(String(v), ctx as z.core.$RefinementCtx<string>),
);
/** A JavaScript regex source (no flags), checked to compile; stored as the text. */
const regexSource = z
  .string()
  .min(1, 'expected a pattern; an empty one would match every failure')
  .describe('a JavaScript regular expression (no flags), matched against the error and output tail')
  .superRefine((v, ctx) => {
    try {
      new RegExp(v);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message, input: v });
    }
  });
const count = (min: number, max = Number.MAX_SAFE_INTEGER) => z.number().int().min(min).max(max);

/** The retry policy: of the job, and of a stage (over the job's). */
const policy = {
  retries: count(0, MAX_RETRIES).optional(),
  backoff: duration.optional(),
  backoffFactor: z.number().min(1).max(MAX_BACKOFF_FACTOR).optional(),
  maxBackoff: duration.optional(),
  jitter: z.number().min(0).max(1).optional(),
  timeout: atLeastMs(MIN_DURATION_MS.timeout).optional(),
  permanentCodes: z.array(z.number().int().min(1).max(255)).optional(),
  permanentErrors: z.array(regexSource).describe('an attempt whose error or output tail matches one fails the task at once').optional(),
  heartbeatTimeout: longerThanZero.describe('kill an attempt silent this long (no ctx.heartbeat(), no exec output) as TIMEOUT').optional(),
  retryQuiet: z
    .boolean()
    .describe('retry an exec command that exits 1-128 with nothing on stderr too (by default such a quiet failure is an answer: failed at once)')
    .optional(),
};

/** Many items per command (group-options.ts): of the job's exec or handler, and of a stage's. */
const grouping = {
  maxArgs: count(1, MAX_GROUP_ITEMS).describe('with exec: at most N items per command, {} is every item of the group, like -n (1: one each)').optional(),
  maxReplaceArgs: count(1, MAX_GROUP_ITEMS).describe('with exec: at most N items per command, {1}…{N} are its items, like -N').optional(),
  xargs: z.boolean().describe('with exec: as many items per command as fit, up to maxItems; {} is every item, a word around it repeats per item, like -X').optional(),
  multiple: z.boolean().describe('with exec: as many items per command as fit, up to maxItems; {} is every item, like -m').optional(),
  maxItems: count(1, MAX_GROUP_ITEMS).describe('at most N items per command with xargs or multiple (default 64), or per call of a handler module\'s batch export').optional(),
};

/** One stage of a per-item pipeline: its own handler and, optionally, its own policy. */
export const StageSchema = z
  .object({
    name: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, 'expected a stage name of letters, digits, _ . and - (it starts every task key: name/item)')
      .describe('stage name; its tasks are keyed name/itemkey'),
    exec: z.string().min(1).describe("shell command per task; {inputs.STAGE.FIELD} reads a needed stage's result").optional(),
    handler: z.string().min(1).describe("a .js, .mjs or .ts module, relative to this file's folder; task.inputs holds the needed results").optional(),
    needs: z.array(z.string()).describe('stages that must succeed for the same item first').optional(),
    output: z.string().min(1).describe("the stage's declared output, relative to this file's folder (a placeholder that gives an absolute path first, such as {dir}/x, stays absolute); {inputs.STAGE.out} names it in later stages").optional(),
    pipe: z.boolean().describe("with exec: the command reads its chunk's bytes, or its item, on stdin").optional(),
    ...grouping,
    ...policy,
  })
  .strict()
  .refine((s) => (s.exec === undefined) !== (s.handler === undefined), { message: 'give the stage exactly one of "exec" or "handler"' });

/**
 * `splitdance.json`: every `run` option, camelCase, plus stages. Unknown fields are errors.
 * Every path in it is relative to the file's folder, wherever `run` is started; only flags
 * given on the command line are relative to the working folder.
 */
export const JobFileSchema = z
  .object({
    $schema: z.string().optional(),
    source: z.string().min(1).describe("directory or file to split, relative to this file's folder").optional(),
    items: z.string().min(1).describe('a list: one task per line (or JSON Lines record), relative to this file\'s folder; "-" for stdin').optional(),
    jsonl: z.boolean().describe('the list is JSON Lines (also by its .jsonl/.ndjson name)').optional(),
    keyField: z.string().min(1).describe("JSON Lines: key each record by this field (default: the record's canonical text)").optional(),
    colsep: z
      .string()
      .min(1, 'expected a pattern that separates the fields of an item, e.g. ","')
      .describe('split an item into {1}, {2}, … on this regular expression (default: whitespace)')
      .superRefine((v, ctx) => {
        try {
          linearRegExp(v);
        } catch (err) {
          ctx.addIssue({ code: 'custom', message: (err as Error).message, input: v });
        }
      })
      .optional(),
    pipe: z.boolean().describe("with exec: the command reads its chunk's bytes, or its item, on stdin").optional(),
    batch: z.string().min(1).describe("batch name; {date} expands to YYYY-MM-DD").optional(),
    exec: z.string().min(1).describe("shell command per task, e.g. 'gzip -k {}'").optional(),
    handler: z.string().min(1).describe("a .js, .mjs or .ts module, relative to this file's folder").optional(),
    ...grouping,
    include: z.array(z.string().min(1, 'expected a non-empty glob')).optional(),
    exclude: z.array(z.string().min(1, 'expected a non-empty glob')).optional(),
    chunkSize: size.optional(),
    lines: count(1).optional(),
    sample: z
      .union([z.number().positive(), z.string()])
      .describe('run a deterministic sample: a fraction (0.1 or "10%") or a number of tasks')
      .transform((v, ctx) => parsedBy((t) => parseSample(t))(String(v), ctx as z.core.$RefinementCtx<string>))
      .optional(),
    rerunChanged: z.boolean().describe('re-run succeeded tasks whose file changed since, and list records that changed').optional(),
    output: z
      .string()
      .min(1)
      .describe("each task's declared output, e.g. 'out/{rel}.gz', relative to this file's folder (a placeholder that gives an absolute path first, such as {dir}/x, stays absolute): the command writes {out}, renamed there on success; a task whose output is newer than its input is not run")
      .optional(),
    concurrency: z
      .union([count(1, MAX_CONCURRENCY), z.string()])
      .describe('worker processes: a number, or a share of the CPUs such as "50%"')
      .transform((v, ctx) => parsedBy((t) => parseConcurrency(t, 'concurrency'))(String(v), ctx as z.core.$RefinementCtx<string>))
      .optional(),
    ...policy,
    maxFailures: countOrShare.optional(),
    maxRuntime: longerThanZero.optional(),
    grace: duration.optional(),
    loadTimeout: longerThanZero.optional(),
    noWait: z.boolean().optional(),
    maxTasksPerWorker: count(1).optional(),
    maxWorkerMemory: size.optional(),
    progressInterval: atLeastMs(MIN_DURATION_MS.progressInterval).optional(),
    metricsFile: z
      .string()
      .min(1)
      .describe("keep the batch's Prometheus metrics in this file (node_exporter's textfile collector), relative to the job file's folder")
      .optional(),
    lease: atLeastMs(MIN_DURATION_MS.lease).optional(),
    historyWarn: count(1).describe('warn when the store holds more attempts than this').optional(),
    print: z.boolean().describe("each attempt's stdout on the run's stdout when it ends, whole (stderr on stderr), like --print").optional(),
    tag: z.boolean().describe('with print: each printed line after its task key and a tab (--tag)').optional(),
    keepOrder: z.boolean().describe('with print: in the order the attempts started, like GNU parallel -k (--keep-order)').optional(),
    results: z
      .string()
      .min(1)
      .describe("each finished task's stdout, stderr and seq as files in FOLDER/1/KEY/, GNU parallel's layout (--results); relative to the job file's folder")
      .optional(),
    lineBuffer: z.boolean().describe('print the output line by line as it comes, each line whole, like GNU parallel --line-buffer (implies print)').optional(),
    stages: z.array(StageSchema).min(1).describe('a per-item pipeline: one task per stage and item').optional(),
    busyCodes: z
      .array(z.number().int().min(1).max(255))
      .describe('exec exit codes that mean "busy, try later": the task waits its backoff and runs again without spending an attempt (default [75]; [] for none)')
      .optional(),
    rate: z
      .string()
      .describe('at most N attempt starts per period for the batch, on every host: "20/s", "300/m", "1000/h" (--rate)')
      .transform(parsedBy(parseRate))
      .optional(),
    rateKey: z
      .string()
      .min(1)
      .describe("apply the rate per rendered key, not to the whole batch: '{item.host}' starts at most the rate per host, on every host (--rate-key; needs rate; \"none\": the batch's rate again)")
      .optional(),
    onComplete: z
      .string()
      .min(1)
      .describe('a shell command run once when the batch reaches its end, whatever the verdict; {batch} and SPLITDANCE_* variables (--on-complete)')
      .optional(),
    onFailure: z
      .string()
      .min(1)
      .describe('a shell command run once when the batch reaches its end with failed or cancelled tasks (--on-failure)')
      .optional(),
    adaptive: z
      .boolean()
      .describe('find how many attempts to keep running (1 to -j) by AIMD: halved when attempts answer busy or time out, grown back by one per window of successes, with a pace in starts per second found at the first busy answer (--adaptive)')
      .optional(),
    maxBusy: longerThanZero.describe('how long a task may answer busy in a row before that counts as a failure (default 1h)').optional(),
    order: z
      .enum(ORDERS)
      .describe('which never-tried tasks run first: key (the default), size (biggest input first), history (slowest in earlier batches of the source first), random (--order)')
      .optional(),
    priority: z
      .array(z.string().transform(parsedBy(parsePriority)))
      .describe("'GLOB=N': keys the glob matches run before the rest, higher N first (default 0); the first glob that matches counts (--priority)")
      .optional(),
  })
  .strict()
  .describe(
    "a splitdance job: every run option, plus stages. Every path in it (source, items, handler, output, metricsFile, a stage's handler and output) is relative to this file's folder, wherever run is started; flags on the command line are relative to the working folder",
  );

/** The JSON Schema of the file as written (the input side of every field). */
export function jobFileJsonSchema(): unknown {
  return z.toJSONSchema(JobFileSchema, { io: 'input' });
}
