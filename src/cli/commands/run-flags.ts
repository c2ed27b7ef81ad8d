import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { UsageError } from '../../errors.js';
import type { JobSettings } from '../../job/job-definition.js';
import { parseCount, parseCountOrPercent, parseDuration, parseFraction, parseNumber, parseSize } from '../../job/units.js';
import { checkTemplate } from '../../worker/exec-template.js';

/** `run`'s flags as commander hands them over (strings, before validation). */
export interface RunFlags {
  job?: string;
  dryRun?: boolean;
  sample?: string;
  rerunChanged?: boolean;
  db?: string;
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
  include?: string[];
  exclude?: string[];
  chunkSize?: string;
  lines?: string;
  wait?: boolean;
  maxFailures?: string;
  maxRuntime?: string;
  grace?: string;
  maxTasksPerWorker?: string;
  maxWorkerMemory?: string;
  progressInterval?: string;
  historyWarn?: string;
  lease?: string;
  json?: boolean;
  quiet?: boolean;
  verbose?: boolean;
  color?: boolean;
}

/** Settings for this invocation only; not stored on the batch. */
export interface Invocation {
  concurrency: number;
  noWait: boolean;
  maxFailures: string | null;
  maxRuntimeMs: number | null;
  graceMs: number;
  maxTasksPerWorker: number | null;
  maxWorkerMemory: number | null;
  progressIntervalMs: number;
  leaseMs: number;
  /** Warn when the store holds more attempt rows than this. */
  historyWarn: number;
}

/** The job settings this command line gives explicitly, validated; absent ones stay undefined. */
export function givenSettings(f: RunFlags, cwd: string): Partial<JobSettings> {
  if (f.exec !== undefined && f.handler !== undefined) {
    throw new UsageError('give either --exec or --handler, not both');
  }
  if (f.exec !== undefined) checkTemplate(f.exec);
  if (f.lines !== undefined && f.chunkSize !== undefined) throw new UsageError('give either --lines or --chunk-size, not both');
  return {
    handler:
      f.exec !== undefined
        ? { kind: 'exec', template: f.exec }
        : f.handler !== undefined
          ? { kind: 'module', path: resolve(cwd, f.handler) }
          : undefined,
    retries: f.retries === undefined ? undefined : parseCount(f.retries, '--retries'),
    backoffMs: f.backoff === undefined ? undefined : parseDuration(f.backoff, '--backoff'),
    backoffFactor: f.backoffFactor === undefined ? undefined : parseNumber(f.backoffFactor, '--backoff-factor', { min: 1 }),
    maxBackoffMs: f.maxBackoff === undefined ? undefined : parseDuration(f.maxBackoff, '--max-backoff'),
    jitter: f.jitter === undefined ? undefined : parseFraction(f.jitter, '--jitter'),
    timeoutMs: f.timeout === undefined ? undefined : positive(parseDuration(f.timeout, '--timeout'), '--timeout'),
    permanentCodes: f.permanentCodes === undefined ? undefined : parseCodes(f.permanentCodes),
    include: f.include?.length ? f.include : undefined,
    exclude: f.exclude?.length ? f.exclude : undefined,
    chunkSize: f.chunkSize === undefined ? undefined : parseSize(f.chunkSize, '--chunk-size'),
    lines: f.lines === undefined ? undefined : parseCount(f.lines, '--lines', { min: 1 }),
  };
}

export function invocationOf(f: RunFlags): Invocation {
  const cpus = availableParallelism();
  return {
    concurrency: f.concurrency === undefined ? cpus : concurrency(f.concurrency, cpus),
    noWait: f.wait === false,
    maxFailures: f.maxFailures ?? null,
    maxRuntimeMs: f.maxRuntime === undefined ? null : parseDuration(f.maxRuntime, '--max-runtime'),
    graceMs: f.grace === undefined ? 10_000 : parseDuration(f.grace, '--grace'),
    maxTasksPerWorker: f.maxTasksPerWorker === undefined ? null : parseCount(f.maxTasksPerWorker, '--max-tasks-per-worker', { min: 1 }),
    maxWorkerMemory: f.maxWorkerMemory === undefined ? null : parseSize(f.maxWorkerMemory, '--max-worker-memory'),
    progressIntervalMs: f.progressInterval === undefined ? 10_000 : positive(parseDuration(f.progressInterval, '--progress-interval'), '--progress-interval'),
    leaseMs: f.lease === undefined ? 30_000 : positive(parseDuration(f.lease, '--lease'), '--lease'),
    historyWarn: f.historyWarn === undefined ? 1_000_000 : parseCount(f.historyWarn, '--history-warn', { min: 1 }),
  };
}

function concurrency(value: string, cpus: number): number {
  if (!/^\d+%?$/.test(value.trim())) {
    throw new UsageError(`-j/--concurrency expects a number of workers or a share of the ${cpus} CPUs such as 50%; got "${value}"`);
  }
  return parseCountOrPercent(value, '-j/--concurrency', cpus);
}

function parseCodes(value: string): number[] {
  const codes = value.split(',').map((s) => s.trim()).filter(Boolean);
  if (codes.length === 0 || codes.some((c) => !/^\d+$/.test(c) || Number(c) > 255 || c === '0')) {
    throw new UsageError(`--permanent-codes expects exit codes 1-255 separated by commas, e.g. 2,64; got "${value}"`);
  }
  return codes.map(Number);
}

function positive(n: number, option: string): number {
  if (n <= 0) throw new UsageError(`${option} must be longer than 0`);
  return n;
}
