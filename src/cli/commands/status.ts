import { UsageError } from '../../errors.js';
import { batchStatus, PENDING_OUTPUTS_LISTED, retryingClusters, verdict } from '../../status/batch-status.js';
import { describeLevels } from '../../status/adaptive-levels.js';
import { describeHookRuns } from '../../status/hook-runs.js';
import { duration, printable, size } from '../format.js';
import { line, type Io, type OutputFlags } from '../io.js';
import { colors } from '../colors.js';
import { commandLineFor } from '../suggested-commands.js';
import { withBatch } from '../with-store.js';

export interface StatusFlags extends OutputFlags {
  db?: string;
  batch?: string;
  watch?: boolean;
  interval?: string;
}

/** `splitdance status`: where the batch stands, as one JSON object or a short human report; exits with its verdict. */
export async function statusCommand(flags: StatusFlags, io: Io): Promise<number> {
  // `status --watch` is routed to `watch` (program.ts).
  if (flags.interval !== undefined) throw new UsageError('--interval goes with --watch');
  return withBatch(
    flags,
    io,
    async (store, batch, { target }) => {
      const s = await batchStatus(store, batch);
      if (flags.json) {
        // One line (SPEC §7); the clusters are in `topErrors` (the first 10, with their ids).
        const { clusters: _clusters, ...json } = s;
        line(io.stdout, JSON.stringify(json));
        return verdict(s);
      }
      const c = colors(io, flags, 'stdout');
      const out: string[] = [];
      out.push(`batch ${c.bold(printable(s.batch))} (${printable(s.source)})`);
      out.push(
        `${s.succeeded + s.failed + s.cancelled}/${s.total} done: ${c.green(`${s.succeeded} succeeded`)}${s.upToDate ? ` (${s.upToDate} up to date, not run)` : ''}, ${s.failed ? c.red(`${s.failed} failed`) : '0 failed'}` +
          `${s.cancelled ? `, ${s.cancelled} cancelled` : ''}; ${s.pending} pending, ${s.retrying} retrying, ${s.running} running, ${s.queued} queued`,
      );
      const stageWidth = Math.max(0, ...s.stages.map((x) => printable(x.stage).length));
      for (const st of s.stages) {
        out.push(
          `  ${printable(st.stage).padEnd(stageWidth)}  ${st.succeeded + st.failed + st.cancelled}/${st.total} done: ` +
            `${st.succeeded} succeeded, ${st.failed} failed, ${st.cancelled} cancelled; ${st.pending} pending, ${st.retrying} retrying, ${st.running} running, ${st.queued} queued`,
        );
      }
      for (const o of s.owners) {
        const held = `${o.tasks} task${o.tasks === 1 ? '' : 's'} held by`;
        if (o.state === 'dead') out.push(c.yellow(`${held} a dead coordinator (pid ${o.pid} on this machine): the next \`${commandLineFor(target, ['run'], s.source)}\` or \`${commandLineFor(target, ['worker'])}\` takes them back`));
        else if (o.state === 'stopped') out.push(c.yellow(`${held} a stopped coordinator (pid ${o.pid} on this machine, SIGSTOP or Ctrl-Z): \`kill -CONT ${o.pid}\` lets it go on; they are not taken while it exists`));
      }
      if (s.outputsPending) {
        out.push(c.yellow(`${s.outputsPending} declared output${s.outputsPending === 1 ? '' : 's'} not in place: the success is committed, its file waits at a temporary path (its rename failed)`));
        for (const p of s.pendingOutputs.slice(0, 10)) out.push(`  ${printable(p.key)} → ${printable(p.out ?? '?')}   waiting at ${printable(p.temp)}`);
        if (s.outputsPending > 10) out.push(`  and ${s.outputsPending - 10} more (status --json lists ${Math.min(s.outputsPending, PENDING_OUTPUTS_LISTED)})`);
      }
      out.push(`store ${size(s.storeBytes)} on disk`);
      if (s.tasksPerSecond) {
        out.push(`rate ${s.tasksPerSecond.toFixed(2)} tasks/s${s.etaSeconds ? `, ETA ${duration(s.etaSeconds * 1000)}` : ''}`);
      }
      const levels = describeLevels(s.adaptive);
      if (levels) out.push(levels);
      for (const l of describeHookRuns(s.hooks)) out.push(printable(l));
      if (s.nextRetryAt) out.push(`next retry due ${s.nextRetryAt} (in ${duration(Math.max(0, Date.parse(s.nextRetryAt) - Date.now()))})`);
      if (s.changed) out.push(`${s.changed} succeeded task(s) have changed files since: \`${commandLineFor(target, ['run', '--rerun-changed'], s.source)}\` re-runs them`);
      if (s.clusters.length) {
        out.push('failures by error:');
        for (const cl of s.clusters.slice(0, 10)) out.push(`  [${cl.id}] ${cl.count} × ${printable(cl.error)}   e.g. ${printable(cl.example)}`);
        out.push(`  (retry one group by its [id], e.g.: ${commandLineFor(target, ['retry-failed', '--cluster', s.clusters[0]!.id])})`);
      }
      const retrying = s.retrying ? await retryingClusters(store, batch) : [];
      if (retrying.length) {
        out.push('retrying, by error:');
        for (const cl of retrying.slice(0, 10)) out.push(`  ${cl.count} × ${printable(cl.error)}   e.g. ${printable(cl.example)}`);
      }
      const retry = `\`${commandLineFor(target, ['retry-failed', '--run'])}\` retries them`;
      const resume = s.outputsPending && s.pending + s.retrying + s.running + s.queued === 0 ? 'puts the outputs in place or says why it cannot' : 'resumes it';
      out.push(s.done ? (s.failed ? `finished with failures: ${retry}` : 'finished') : `not finished: \`${commandLineFor(target, ['run'], s.source)}\` ${resume}`);
      io.stdout.write(`${out.join('\n')}\n`);
      return verdict(s);
    },
    { readonly: true },
  );
}
