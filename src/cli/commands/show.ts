import type { AttemptRow, TaskRow } from '../../store/task-store.js';
import { groupLogName } from '../../store/log-layout.js';
import { cell, duration, iso, plural, printable } from '../format.js';
import { line, type Io, type OutputFlags } from '../io.js';
import { colors } from '../colors.js';
import { commandLineFor } from '../suggested-commands.js';
import { withBatch } from '../with-store.js';
import { findTask, taskJson } from '../task-json.js';

export interface ShowFlags extends OutputFlags {
  db?: string;
  batch?: string;
}

/** `splitdance show <key>`: the task and every attempt ever made, oldest first. */
export async function showCommand(key: string, flags: ShowFlags, io: Io): Promise<number> {
  return withBatch(
    flags,
    io,
    async (store, batch, { target }) => {
      const { task, attempts } = await findTask(store, batch, key, target);
      // A committed success whose rename failed: its result names an output that is not there yet.
      const pending = task.status === 'SUCCESS' ? ((await store.pendingOutputs(batch.id)).find((o) => o.taskId === task.id) ?? null) : null;
      const outputPending = pending && { out: pending.out, temp: pending.temp };
      if (flags.json) {
        line(io.stdout, JSON.stringify({ ...showJson(task, attempts), outputPending }));
        return 0;
      }
      const c = colors(io, flags, 'stdout');
      // Every piece of data is printable(): keys, paths, errors and output come from files and handlers.
      const p = (text: string | null | undefined) => printable(text);
      const out = [
        `${c.bold(cell(task.key, 1000))} in batch ${p(batch.name)}: ${task.status}, ${plural(task.attempts, 'attempt')} counted of ${task.maxAttempts}`,
        `path ${p(task.payload.path)}${task.payload.start !== undefined ? ` bytes [${task.payload.start}, ${task.payload.end})` : ''}`,
      ];
      if (task.stage) out.push(`stage ${p(task.stage)} of item ${p(task.item)}${task.needs.length ? `; needs ${task.needs.map(p).join(', ')}` : ''}`);
      if (task.upToDate) out.push(`up to date: its declared output was newer than its input, so its last attempt ran nothing (--force runs it)`);
      if (task.lastError) out.push(`last error: ${p(task.lastError)}`);
      if (task.result) out.push(`result: ${p(task.result)}`);
      if (outputPending) {
        out.push(
          c.yellow(`declared output not in place: ${p(outputPending.out ?? '?')} (its rename failed); the file waits at ${p(outputPending.temp)}: \`${commandLineFor(target, ['run'], batch.source)}\` puts it in place or says why it cannot`),
        );
      }
      if (task.status === 'PENDING' && task.nextRunAt > Date.now()) out.push(`next attempt due ${iso(task.nextRunAt)}`);
      out.push(`created ${iso(task.createdAt)}; ${plural(attempts.length, 'attempt')} recorded:`);
      attempts.forEach((a, i) => {
        const prev = attempts[i - 1];
        const waited = prev?.endedAt ? `  (after ${duration(a.startedAt - prev.endedAt)})` : '';
        out.push(
          `#${a.attempt}  ${iso(a.startedAt)} → ${iso(a.endedAt) ?? endUnknown(a)}  ${duration(a.durationMs)}  ${colorOutcome(c, a.outcome)}` +
            `  worker ${p(a.workerId)} pid ${a.pid ?? '-'} on ${p(a.host)}` +
            // Which definition (handler) it ran: another `run` with a new --exec makes a new version.
            `${a.jobVersion !== null ? `  job v${a.jobVersion}` : ''}` +
            `${a.exitCode !== null ? `  exit ${a.exitCode}` : ''}${a.signal ? `  ${p(a.signal)}` : ''}${waited}`,
        );
        if (task.upToDate && i === attempts.length - 1) out.push('    up to date: nothing ran');
        if (a.error) out.push(`    error: ${p(a.error)}`);
        const group = a.logPath ? groupLogName(a.id, a.logPath) : null;
        if (group) out.push(`    in a group: one command ran it with other items; its log is ${p(group)}`);
        if (a.outputTail) out.push(...a.outputTail.trimEnd().split('\n').slice(-5).map((l) => `    | ${cell(l, 200)}`));
        if (a.logPath) out.push(`    full output: ${commandLineFor(target, ['logs', '--attempt', String(a.attempt)], task.key)}`);
      });
      line(io.stdout, out.join('\n'));
      return 0;
    },
    { readonly: true },
  );
}

/**
 * An attempt without an end: still running, or LOST (its owner died or went silent, so when
 * its command ended is unknown; the takeover time is not its end) and never reported since.
 */
function endUnknown(a: AttemptRow): string {
  return a.outcome === null ? '(running)' : '(end unknown)';
}

function colorOutcome(c: ReturnType<typeof colors>, outcome: string | null): string {
  if (outcome === null) return c.cyan('RUNNING');
  return outcome === 'SUCCESS' ? c.green(outcome) : outcome === 'INTERRUPTED' || outcome === 'BUSY' ? c.yellow(outcome) : c.red(outcome);
}

function showJson(task: TaskRow, attempts: AttemptRow[]) {
  return {
    ...taskJson(task),
    attemptsCount: task.attempts,
    attempts: attempts.map((a) => ({
      attempt: a.attempt,
      outcome: a.outcome,
      startedAt: iso(a.startedAt),
      endedAt: iso(a.endedAt),
      durationMs: a.durationMs,
      workerId: a.workerId,
      host: a.host,
      pid: a.pid,
      exitCode: a.exitCode,
      signal: a.signal,
      error: a.error,
      outputTail: a.outputTail,
      logPath: a.logPath,
      jobVersion: a.jobVersion,
    })),
    needs: task.needs,
    payload: task.payload,
    fingerprint: task.fingerprint,
  };
}
