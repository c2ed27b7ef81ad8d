import { UsageError } from '../../errors.js';
import { reorderBatch, type OrderChange } from '../../run/reorder-batch.js';
import { describePriority, orderOf, parsePriority, type PriorityRule } from '../../split/task-order.js';
import { describeRate, parseRate } from '../../job/rate.js';
import { parseCount } from '../../job/units.js';
import { MAX_CONCURRENCY } from '../../job/option-checks.js';
import { plural, printable } from '../format.js';
import { line, type Io, type OutputFlags } from '../io.js';
import { defaultedNote, withBatch } from '../with-store.js';

export interface SetFlags extends OutputFlags {
  db?: string;
  trustStoreOwner?: string[];
  batch?: string;
  order?: string;
  shuf?: boolean;
  /** `--priority GLOB=N` (repeatable), or false for `--no-priority`. */
  priority?: string[] | false;
  /** `--rate N/s|N/m|N/h`, or `none`. */
  rate?: string;
  /** `-j N`, or `none`. */
  concurrency?: string;
  /** `--adaptive` (true) or `--no-adaptive` (false). */
  adaptive?: boolean;
}

/**
 * `splitdance set [--batch B] --order O | --priority 'GLOB=N' | --no-priority`: changes a
 * batch's claim order while it runs. Its waiting tasks are re-ranked in the store, so every
 * run and worker on it claims in the new order from its next claim on; the batch keeps the
 * options for its later runs.
 */
export async function setCommand(flags: SetFlags, io: Io): Promise<number> {
  const change = changeOf(flags);
  return withBatch(flags, io, async (store, batch, { defaulted }) => {
    if (defaulted && !flags.quiet && !flags.json) line(io.stderr, defaultedNote(batch.name));
    const done = await reorderBatch(store, batch, change);
    if (flags.json) line(io.stdout, JSON.stringify({ batch: batch.name, order: done.order, priority: done.priority, rate: done.rate && describeRate(done.rate), rateKey: done.rateKey, concurrency: done.limit, adaptive: done.adaptive, moved: done.moved }));
    else if (!flags.quiet) {
      const ahead = done.priority.length ? `, ahead of it ${describePriority(done.priority)}` : '';
      const perKey = done.rateKey !== null ? ` per --rate-key ${printable(JSON.stringify(done.rateKey))}` : '';
      const rate = done.rate ? `at most ${describeRate(done.rate)} starts${perKey}` : 'no rate limit';
      const limit = done.limit !== null ? `; at most ${done.limit} running on each run and worker` : '';
      const adaptive = done.adaptive ? '; --adaptive' : '';
      line(io.stderr, `batch ${printable(batch.name)}: order ${done.order}${ahead}; ${rate}${limit}${adaptive}; ${plural(done.moved, 'waiting task')} moved`);
    }
    return 0;
  });
}

/** The flags, checked before the store is opened: at least one change, each valid. */
function changeOf(flags: SetFlags): OrderChange {
  const order = orderOf(flags.order, flags.shuf);
  let priority: PriorityRule[] | undefined;
  if (flags.priority === false) priority = [];
  else if (flags.priority?.length) priority = flags.priority.map((p) => parsePriority(p, '--priority'));
  const rate = flags.rate === undefined ? undefined : flags.rate.trim() === 'none' ? null : parseRate(flags.rate, '--rate');
  const limit = flags.concurrency === undefined ? undefined : flags.concurrency.trim() === 'none' ? null : parseCount(flags.concurrency, '-j/--concurrency', { min: 1, max: MAX_CONCURRENCY });
  const { adaptive } = flags;
  if (order === undefined && priority === undefined && rate === undefined && limit === undefined && adaptive === undefined) {
    throw new UsageError("set changes a running batch: give --order key|size|history|random (or --shuf), --priority 'GLOB=N', --no-priority, --rate N/s|none, -j N|none or --adaptive|--no-adaptive");
  }
  return { order, priority, rate, limit, adaptive };
}
