import type { OutputSpec } from '../output/output-path.js';
import type { HandlerSpec } from '../worker/protocol.js';
import type { ItemsMode } from '../split/items.js';
import type { FileState } from '../split/file-growth.js';
import type { Order, PriorityRule } from '../split/task-order.js';
import type { Rate } from './rate.js';
import { groupFlags } from './group-options.js';

/**
 * The effective definition of a batch, stored on it as JSON so a bare re-run (or a
 * `worker`) uses the same handler and policy. `version` lets its shape evolve. A type alias,
 * not an interface: an alias is assignable to the store's JSON object (`BatchRecord['job']`),
 * so a definition is written as it is, with its fields still checked, and without a cast.
 */
export type JobDefinition = {
  version: 1;
  source: string;
  /** `items`: the source is a list (SPEC §3), read this way; absent or null: a directory or a file. */
  split: { include: string[]; exclude: string[]; chunkSize: number; lines: number | null; items?: ItemsMode | null; file?: FileState | null };
  handler: HandlerSpec | null;
  retries: number;
  backoffMs: number;
  backoffFactor: number;
  maxBackoffMs: number;
  jitter: number;
  timeoutMs: number | null;
  permanentCodes: number[];
  /** The declared output of every task (SPEC §4), or null; with stages, each stage declares its own. */
  output: OutputSpec | null;
  /** Regex sources (validated when given): a failed attempt whose error or output tail matches one is final. */
  permanentErrors: string[];
  /** An attempt silent this long (no ctx.heartbeat(), no output of an exec) is killed as TIMEOUT. */
  heartbeatTimeoutMs: number | null;
  /**
   * Retry an `--exec` command's quiet failures too: an exit code from 1 to 128 with nothing on
   * stderr (grep finding nothing) is otherwise an answer, final at once (docs/running.md).
   */
  retryQuiet: boolean;
  /** A per-item pipeline; empty without stages (then `handler` runs every task). */
  stages: StageDefinition[];
  /**
   * "Busy, try later" (SPEC §10): an --exec exit code in `busyCodes` (or a handler's RetryLater)
   * puts the task back without spending an attempt, for at most `maxBusyMs` in a row.
   */
  busyCodes: number[];
  maxBusyMs: number;
  /** --rate: at most `n` attempt starts per `periodMs` for the batch, on every host (rate.ts); null: no limit. */
  rate: Rate | null;
  /** --rate-key: a template rendered per task as it is stored (template/rate-key.ts); the rate applies per rendered key, not to the batch. Null: the batch's. */
  rateKey: string | null;
  /** `splitdance set -j N`: each run and worker of the batch keeps at most N attempts running (below its own -j); null: its -j. */
  concurrencyLimit: number | null;
  /** --adaptive: each run and worker finds how many attempts to keep running by AIMD on busy answers and timeouts (coordinator/adaptive.ts). */
  adaptive: boolean;
  /**
   * --on-complete / --on-failure (SPEC §10): shell commands run once when the batch reaches its
   * end (every task finished), the first whatever the verdict, the second when any task failed
   * or was cancelled (run/batch-hooks.ts). Null: none.
   */
  onComplete: string | null;
  onFailure: string | null;
  /** Which never-tried tasks are claimed first (SPEC §10, task-order.ts): --order, then --priority ahead of it. */
  order: Order;
  priority: PriorityRule[];
};

/**
 * The definition stored on a batch, typed: the one read of the store's JSON as a definition.
 * Not validated: the store is trusted (SPEC §9, "a handler definition in the store is code":
 * whoever can write it can already run any command), and what is there was written by
 * definitionOf, of this version or an older one whose missing fields settingsOf fills in. A
 * check here would refuse such older batches and guard nothing; the job file's zod schema is
 * the place where untrusted text is validated, before anything is stored.
 */
export function storedDefinition(batch: { job: unknown }): JobDefinition {
  return batch.job as JobDefinition;
}

/**
 * Stages: a per-item pipeline, part of the definition (stages.ts orders and expands them).
 * Every split item gets one task per stage, keyed `stage/itemkey`; a stage task is claimable
 * once the stages it `needs` succeeded for the same item. Unset policy fields fall back to
 * the job's.
 */
export interface StageDefinition {
  name: string;
  needs: string[];
  handler: HandlerSpec;
  retries?: number;
  backoffMs?: number;
  backoffFactor?: number;
  maxBackoffMs?: number;
  jitter?: number;
  timeoutMs?: number;
  permanentCodes?: number[];
  /** The stage's declared output (its tasks write `{out}`); none unless given. */
  output?: OutputSpec;
  permanentErrors?: string[];
  heartbeatTimeoutMs?: number;
  retryQuiet?: boolean;
}

export type JobSettings = Omit<JobDefinition, 'version' | 'source' | 'split'> &
  Omit<JobDefinition['split'], 'items' | 'file'> & {
    items: ItemsMode | null;
    /** A file source: the sizes it was chunked at and its hash (file-growth.ts); null before its first split. */
    fileState: FileState | null;
  };

export const DEFAULT_SETTINGS: JobSettings = {
  include: [],
  exclude: [],
  chunkSize: 64 * 1024 * 1024,
  lines: null,
  items: null,
  fileState: null,
  handler: null,
  retries: 3,
  backoffMs: 5000,
  backoffFactor: 5,
  maxBackoffMs: 60 * 60 * 1000,
  jitter: 0.1,
  timeoutMs: null,
  permanentCodes: [],
  output: null,
  permanentErrors: [],
  heartbeatTimeoutMs: null,
  retryQuiet: false,
  stages: [],
  busyCodes: [75],
  maxBusyMs: 60 * 60 * 1000,
  rate: null,
  rateKey: null,
  concurrencyLimit: null,
  adaptive: false,
  onComplete: null,
  onFailure: null,
  order: 'key',
  priority: [],
};

export function settingsOf(job: JobDefinition): JobSettings {
  const { version: _v, source: _s, split, ...rest } = job;
  return {
    ...split,
    ...rest,
    // Stored before these existed: none.
    stages: rest.stages ?? [],
    output: rest.output ?? null,
    permanentErrors: rest.permanentErrors ?? [],
    heartbeatTimeoutMs: rest.heartbeatTimeoutMs ?? null,
    retryQuiet: rest.retryQuiet ?? false,
    // Stored before busy codes existed: 75, unless the batch made it a permanent failure.
    busyCodes: rest.busyCodes ?? DEFAULT_SETTINGS.busyCodes.filter((c) => ![rest.permanentCodes ?? [], ...(rest.stages ?? []).map((s) => s.permanentCodes ?? [])].some((codes) => codes.includes(c))),
    maxBusyMs: rest.maxBusyMs ?? DEFAULT_SETTINGS.maxBusyMs,
    rate: rest.rate ?? null,
    rateKey: rest.rateKey ?? null,
    concurrencyLimit: rest.concurrencyLimit ?? null,
    adaptive: rest.adaptive ?? false,
    onComplete: rest.onComplete ?? null,
    onFailure: rest.onFailure ?? null,
    order: rest.order ?? 'key',
    priority: rest.priority ?? [],
    items: split.items ?? null,
    fileState: split.file ?? null,
  };
}

export function definitionOf(source: string, s: JobSettings): JobDefinition {
  const { include, exclude, chunkSize, lines, items, fileState, ...rest } = s;
  return { version: 1, source, split: { include, exclude, chunkSize, lines, ...(items ? { items } : {}), ...(fileState ? { file: fileState } : {}) }, ...rest };
}

/**
 * Layers the settings given on this command line over the stored ones (or the
 * defaults for a new batch) and lists what changed, so `run` can say so.
 */
export function mergeSettings(base: JobSettings, given: Partial<JobSettings>): { settings: JobSettings; changed: string[] } {
  const settings = { ...base };
  const changed: string[] = [];
  for (const [name, value] of Object.entries(given) as [keyof JobSettings, unknown][]) {
    if (value === undefined) continue;
    if (JSON.stringify(base[name]) !== JSON.stringify(value)) changed.push(name);
    (settings as Record<string, unknown>)[name] = value;
  }
  return { settings, changed };
}

/**
 * The handler as the flags that give it: `--exec "gzip {}" -n 64`, `--handler ./h.js --max-items 8`.
 * `groups: false` leaves the grouping words out (a derived batch name: a new group size resumes
 * the same batch, its tasks are the same).
 */
export function describeHandler(h: HandlerSpec | null, stages: StageDefinition[] = [], { groups = true } = {}): string {
  if (stages.length) return stages.map((s) => `${s.name}: ${describeHandler(s.handler, [], { groups })}`).join('; ');
  if (!h) return '(none)';
  const grouping = !groups ? '' : h.kind === 'exec' ? (h.group ? ` ${groupFlags(h.group)}` : '') : h.maxItems !== undefined ? ` --max-items ${h.maxItems}` : '';
  return withoutCredentials(`${h.kind === 'exec' ? `--exec ${JSON.stringify(h.template)}${h.pipe ? ' --pipe' : ''}` : `--handler ${h.path}`}${grouping}`);
}

/** `scheme://user:secret@host` in a handler shown for a person: the secret masked, as a --db URL's is. */
function withoutCredentials(text: string): string {
  return text.replace(/\b([a-z][a-z0-9+.-]*:\/\/[^\s:/@'"]*:)[^\s@/'"]+@/gi, '$1***@');
}
