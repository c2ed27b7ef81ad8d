/**
 * The order a batch's never-tried tasks are claimed in (SPEC §10): `--order` gives each task a
 * rank (lower first) and `--priority 'GLOB=N'` a priority (higher first, before any rank); ties
 * keep key order. Both are stored on the task by the enqueue and read by the claim through
 * an index (tasks_by_state), so the order costs the claim nothing at a million tasks. Retries
 * are not ranked: a due retry is claimed in its turn, earliest due first, under every order.
 */
import { durationKey, LEARNED_RANK, type TaskSpec } from '../store/task-spec.js';
import { UsageError } from '../errors.js';
import { KeyGlob } from '../key-glob.js';
import { printable } from '../printable.js';

export const ORDERS = ['key', 'size', 'history', 'random'] as const;
export type Order = (typeof ORDERS)[number];

/** One `--priority 'GLOB=N'`: keys the glob matches (a stage task's item key too) are claimed ahead, by N. */
export interface PriorityRule {
  glob: string;
  n: number;
}

/** The largest |N| of a --priority (a 32-bit column on PostgreSQL). */
const MAX_PRIORITY = 1_000_000_000;


/** How `rankSpecs` orders a batch. */
export interface OrderPlan {
  order: Order;
  priority: PriorityRule[];
  /** The random order's seed (the batch's name): a fixed shuffle per batch, so a rerun re-ranks nothing. */
  seed: string;
  /** `history`: the median duration (ms) of each key's successes, by `durationKey`. */
  learned?: ReadonlyMap<string, number>;
}

/** `specs`, each with the priority and rank the plan gives it (both absent when 0). */
export function* rankSpecs(specs: Iterable<TaskSpec>, plan: OrderPlan): Generator<TaskSpec> {
  const rules = plan.priority.map((r) => ({ glob: new KeyGlob(r.glob), n: r.n }));
  if (plan.order === 'key' && rules.length === 0) return yield* specs;
  for (const spec of specs) {
    const rank = rankOf(spec, plan);
    const rule = rules.find((r) => r.glob.matches(spec.key) || (spec.item !== undefined && r.glob.matches(spec.item)));
    yield { ...spec, ...(rank ? { rank } : {}), ...(rule?.n ? { priority: rule.n } : {}) };
  }
}

function rankOf(spec: TaskSpec, plan: OrderPlan): number {
  switch (plan.order) {
    case 'key':
      return 0;
    case 'size':
      return -sizeOf(spec);
    case 'random':
      return hash(`${plan.seed}\u0000${spec.stage ?? ''}\u0000${spec.key}`);
    case 'history': {
      const ms = plan.learned?.get(durationKey(spec.stage ?? '', spec.key));
      // A key with a learned duration ranks before every key without (they follow by size), the slowest first.
      return ms === undefined ? -sizeOf(spec) : -LEARNED_RANK - Math.round(ms);
    }
  }
}

/**
 * The bytes a task reads: a chunk's or a block's range, an item's text, else the file's size
 * (its fingerprint is `size:mtime`). Capped below LEARNED_RANK, so it never reads as a learned duration.
 */
export function sizeOf(spec: TaskSpec): number {
  const p = spec.payload;
  let size: number;
  if (p.start !== undefined && p.end !== undefined) size = p.end - p.start;
  else if (p.item !== undefined) size = Buffer.byteLength(p.item);
  else size = Number.parseInt(spec.fingerprint ?? '', 10) || 0;
  return Math.min(Math.max(size, 0), LEARNED_RANK - 1);
}

/** FNV-1a, 32 bits, then MurmurHash3's finaliser: keys that differ in their last character alone still land far apart. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * A `--priority` value: `GLOB=N`, split at the last `=` (a glob may hold one), N a whole
 * number of at most MAX_PRIORITY either way; the glob as `--key` reads it (key-glob.ts).
 */
export function parsePriority(value: string, option: string): PriorityRule {
  const at = value.lastIndexOf('=');
  const glob = at > 0 ? value.slice(0, at) : '';
  const n = at > 0 ? value.slice(at + 1).trim() : '';
  if (!glob || !/^[+-]?\d+$/.test(n) || Math.abs(Number(n)) > MAX_PRIORITY) {
    throw new UsageError(
      `${option} expects GLOB=N, a key glob and a whole number of at most ±${MAX_PRIORITY.toLocaleString('en-US')} (higher runs first, default 0), e.g. 'urgent/**=10'; got ${JSON.stringify(value)}`,
    );
  }
  return { glob, n: Number(n) };
}

/** `--order`, or `--shuf` (GNU parallel's word for `--order random`); both only when they agree. */
export function orderOf(order: string | undefined, shuf: boolean | undefined): Order | undefined {
  const given = order === undefined ? undefined : parseOrder(order, '--order');
  if (!shuf) return given;
  if (given !== undefined && given !== 'random') throw new UsageError(`--shuf is --order random; give either --shuf or --order ${given}, not both`);
  return 'random';
}

/** The rules as a person reads them: `urgent/**=10, *.gz=-1`. */
export function describePriority(rules: PriorityRule[]): string {
  return rules.map((r) => printable(`${r.glob}=${r.n}`)).join(', ');
}

/** An `--order` value. */
export function parseOrder(value: string, option: string): Order {
  if ((ORDERS as readonly string[]).includes(value)) return value as Order;
  throw new UsageError(`${option} expects one of ${ORDERS.join(', ')} (biggest input first is size); got ${JSON.stringify(value)}`);
}
