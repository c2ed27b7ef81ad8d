import { describeHandler } from '../job/job-definition.js';
import { describePriority } from '../split/task-order.js';
import { wouldBeUpToDate } from '../job/planned-outputs.js';
import { formatMs } from '../job/units.js';
import { describeStore } from '../store/open-store.js';
import type { QueryStore } from '../store/task-store.js';
import { size } from './format.js';
import { line, write, type Io } from './io.js';
import { printable } from '../printable.js';
import type { RunPlan } from '../job/plan-run.js';
import type { HandlerSpec } from '../worker/protocol.js';
import { eachDryRunEntry, entryLine, FIRST_COMMANDS, type DryRunEntry, type SkippedEntry } from './dry-run-commands.js';

const FIRST_KEYS = 5;

/** `run --dry-run`: what would happen, from reads only. The store is opened read-only or not at all. */
export async function printPlan(plan: RunPlan, store: QueryStore | null, io: Io): Promise<number> {
  const existing = plan.existing && store ? await store.findBatch(plan.batchName) : undefined;
  let count = 0;
  let known = 0;
  let upToDate = 0;
  const outputs = !plan.inv.force && (plan.settings.output !== null || plan.settings.stages.some((s) => s.output));
  const first: string[] = [];
  for (const spec of plan.split()) {
    if (first.length < FIRST_KEYS) first.push(spec.key);
    count++;
    if (existing && store && (await store.getTask(existing.id, spec.key))) known++;
    if (outputs && wouldBeUpToDate(plan.settings, spec, plan.batchName)) upToDate++;
  }
  const counts = existing && store ? await store.counts(existing.id) : null;
  const changed = existing && store ? await store.changedCount(existing.id) : 0;
  const s = plan.settings;
  const storeName = describeStore(plan.dbPath);
  const result = {
    dryRun: true,
    source: plan.source,
    kind: plan.kind,
    batch: plan.batchName,
    batchExists: Boolean(plan.existing),
    store: storeName,
    // The names of run's `start` event (SPEC §7): the tasks of the batch, and those it would insert.
    total: count,
    inserted: count - known,
    /** Tasks whose declared output is newer than their input: recorded SUCCESS without running (not with --force). */
    upToDate,
    firstKeys: first,
    chunking: plan.kind === 'file' || s.items?.format === 'blocks' ? (s.lines ? { lines: s.lines } : { chunkSize: s.chunkSize }) : null,
    sample: plan.sample,
    handler: s.handler,
    output: s.output?.template ?? null,
    stages: s.stages.length ? s.stages : undefined,
    concurrency: plan.inv.concurrency,
    retries: s.retries,
    timeoutMs: s.timeoutMs,
    heartbeatTimeoutMs: s.heartbeatTimeoutMs,
    retryQuiet: s.retryQuiet,
    permanentCodes: s.permanentCodes,
    permanentErrors: s.permanentErrors,
    order: s.order,
    priority: s.priority,
    succeeded: counts?.succeeded ?? 0,
    failed: counts?.failed ?? 0,
    retrying: counts?.retrying ?? 0,
    changed,
    wouldRerunChanged: plan.rerunChanged ? changed : 0,
  };
  // The commands, after the plan: all of them with --verbose, else the first 20.
  const limit = plan.flags.verbose ? Number.POSITIVE_INFINITY : FIRST_COMMANDS;
  if (plan.flags.json) {
    const commands: DryRunEntry[] = [];
    // Why the first tasks it would not start are skipped (all of them with --verbose).
    const skipped: SkippedEntry[] = [];
    const { more } = await eachDryRunEntry(plan, store, existing?.id ?? null, limit, async (e) => void commands.push(e), (key, reason) => {
      if (skipped.length < limit) skipped.push({ key, reason: reason() });
    });
    line(io.stdout, JSON.stringify({ ...result, commands, moreCommands: more, skipped }));
    return 0;
  }
  const out = [
    `dry run: nothing is written`,
    `source   ${plan.source === '-' ? 'stdin' : printable(plan.source)} (${s.items?.format === 'blocks' ? 'blocks' : plan.kind}${result.chunking ? `, ${s.lines ? `${s.lines} lines` : `${size(s.chunkSize)}`} per ${s.items?.format === 'blocks' ? 'block' : 'chunk'}` : ''})`,
    `batch    ${plan.batchName}${plan.existing ? ' (exists)' : ' (new)'} in store ${storeName}`,
    `tasks    ${count}${plan.existing ? `, ${result.inserted} new` : ''}${plan.sample ? ' (sampled)' : ''}; first${plan.kind === 'items' ? ' items' : ''}: ${first.map((k) => printable(k)).join(', ')}${count > first.length ? ', …' : ''}`,
    ...(outputs ? [`outputs  ${upToDate} of ${count} task(s) up to date: they would be recorded SUCCESS without running (--force runs them)`] : []),
    `handler  ${describeHandler(s.handler, s.stages)} on ${plan.inv.concurrency} worker(s), ${s.retries} retries${s.timeoutMs ? `, timeout ${formatMs(s.timeoutMs)}` : ''}` +
      `${s.heartbeatTimeoutMs ? `, heartbeat timeout ${formatMs(s.heartbeatTimeoutMs)}` : ''}${s.permanentErrors.length ? `, ${s.permanentErrors.length} permanent-error pattern(s)` : ''}${s.retryQuiet ? ', quiet failures retried' : ''}` +
      groupsLine(s),
    ...(s.order !== 'key' || s.priority.length ? [orderLine(s)] : []),
  ];
  if (counts) {
    out.push(
      `state    ${counts.succeeded} already succeeded, ${counts.failed} failed (retry-failed resets them), ${counts.retrying} waiting to retry` +
        (changed ? `, ${changed} changed since success${plan.rerunChanged ? ' (would re-run)' : ''}` : ''),
    );
  }
  line(io.stdout, out.join('\n'));
  await printCommands(plan, store, existing?.id ?? null, limit, io);
  return 0;
}

/** One line per task the run would start (dry-run-commands.ts), under a line that says what they are. */
async function printCommands(plan: RunPlan, store: QueryStore | null, batchId: number | null, limit: number, io: Io): Promise<void> {
  const module = plan.settings.handler?.kind === 'module' || plan.settings.stages.some((st) => st.handler.kind === 'module');
  const what = module ? 'tasks (key and payload, as JSON)' : 'commands';
  if (!Number.isFinite(limit)) {
    // --verbose: every one, written as it is rendered (a list of any length in bounded memory).
    line(io.stdout, `${what}:`);
    const { shown } = await eachDryRunEntry(plan, store, batchId, limit, (e) => write(io.stdout, `${entryLine(e)}\n`));
    if (shown === 0) line(io.stdout, NONE);
    return;
  }
  const lines: string[] = [];
  const { more } = await eachDryRunEntry(plan, store, batchId, limit, async (e) => void lines.push(entryLine(e)));
  line(io.stdout, `${what}${more ? ` (the first ${limit}; --verbose prints every one)` : ''}:`);
  line(io.stdout, lines.length ? lines.join('\n') : NONE);
}

/** `, up to 64 items per command` (`-n 64`, `-X`, …; of each grouped stage), or `, up to 8 items per batch call` (a module's --max-items). */
function groupsLine(s: RunPlan['settings']): string {
  const per = (h: HandlerSpec) => (h.kind === 'exec' ? (h.group ? `up to ${h.group.max} items per command` : null) : h.maxItems !== undefined ? `up to ${h.maxItems} items per batch call` : null);
  if (s.stages.length) return s.stages.map((st) => [st.name, per(st.handler)] as const).filter(([, p]) => p).map(([name, p]) => `; ${name}: ${p}`).join('');
  const p = s.handler && per(s.handler);
  return p ? `, ${p}` : '';
}

/** The claim order, when it is not key order: the commands below stay in key order. */
function orderLine(s: RunPlan['settings']): string {
  const order = { key: 'key order', size: 'biggest input first', history: 'slowest in earlier batches of the source first', random: 'random' }[s.order];
  const priority = s.priority.length ? `; ahead of it: ${describePriority(s.priority)}` : '';
  return `order    ${order}${priority} (the list below is in key order)`;
}

const NONE = '(none: every task is finished or up to date)';
