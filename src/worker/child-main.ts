/**
 * The worker process: loads the handler once, then runs one attempt at a time, in the
 * order the coordinator queued them. Each outcome is handed to the channel before the
 * next attempt starts, so the coordinator always knows which attempt is running: a
 * crash, a timeout or a process group is never pinned on the wrong one. It never touches
 * the store and never decides retries. When the coordinator's channel closes it kills
 * what it started and exits, so a SIGKILLed coordinator leaves no orphans; queued
 * attempts never start.
 */
import { serializeError } from '../errors.js';
import type { Handler } from './handler-types.js';
import { killGroup } from './kill-group.js';
import { loadHandler } from './load-handler.js';
import type { DoneMessage, FromWorker, HandlerSpec, TaskMessage, ToWorker } from './protocol.js';
import { runExec } from './run-exec.js';
import { runModule } from './run-module.js';

/** Per stage ('' without stages): the spec, and the module's default export once loaded. */
const handlers = new Map<string, { spec: HandlerSpec; fn: Handler | null }>();
let killGraceMs = 2000;
let current: { token: number; pgid: number | null; abort(reason: string): void } | null = null;
const queue: TaskMessage[] = [];

const send = (msg: FromWorker) => process.send?.(msg);

process.on('message', (msg: ToWorker) => {
  if (msg.type === 'load') void load(msg.handlers, msg.killGraceMs);
  else if (msg.type === 'run') {
    queue.push(...msg.tasks);
    if (!draining) void drain();
  } else if (msg.type === 'abort') {
    if (msg.reason === 'shutdown') dropQueued();
    if (current?.token === msg.token) current.abort(msg.reason);
  } else if (msg.type === 'drop') dropQueued();
});

process.on('disconnect', () => {
  if (current?.pgid) killGroup(current.pgid, 'SIGKILL');
  process.exit(0);
});

async function load(specs: Record<string, HandlerSpec>, grace: number): Promise<void> {
  killGraceMs = grace;
  try {
    for (const [stage, spec] of Object.entries(specs)) {
      handlers.set(stage, { spec, fn: spec.kind === 'module' ? await loadHandler(spec.path) : null });
    }
    send({ type: 'ready' });
  } catch (err) {
    send({ type: 'load-failed', error: serializeError(err) });
  }
}

/** Hands the queued attempts back unstarted. */
function dropQueued(): void {
  if (queue.length) send({ type: 'dropped', tokens: queue.splice(0).map((t) => t.token) });
}

let draining = false;

/** Runs the queued attempts one by one. */
async function drain(): Promise<void> {
  draining = true;
  while (queue.length) await run(queue.shift()!);
  draining = false;
}

async function run(task: TaskMessage): Promise<void> {
  const h = handlers.get(task.stage);
  if (!h) throw new Error(`no handler loaded for stage "${task.stage}"`); // the coordinator sends only stages it loaded
  // Set before the attempt starts, so a message arriving meanwhile sees it running.
  const attempt: NonNullable<typeof current> = { token: task.token, pgid: null, abort: () => {} };
  current = attempt;
  const running =
    h.spec.kind === 'exec'
      ? runExec(h.spec.template, task, killGraceMs, taskVars(task), (pgid) => {
          attempt.pgid = pgid;
          send({ type: 'spawned', token: task.token, pgid });
        })
      : runModule(h.fn!, task, () => send({ type: 'heartbeat', token: task.token }));
  attempt.abort = (reason) => running.abort(reason);
  const outcome = await running.done;
  current = null;
  const result: DoneMessage = { token: task.token, ...outcome };
  // Written to the channel before anything else runs here: if the next attempt kills this
  // process, this outcome has left already.
  // Peak RSS, for recycling: a getrusage() call, where reading the current RSS costs more than a no-op task.
  const done: FromWorker = { type: 'done', result, rss: process.resourceUsage().maxRSS * 1024 };
  await new Promise<void>((written) => process.send?.(done, undefined, {}, () => written()) ?? written());
}

/** What an exec attempt gets over the worker's environment. */
function taskVars(task: TaskMessage): Record<string, string> {
  return {
    SPLITDANCE_KEY: task.key,
    SPLITDANCE_PATH: task.payload.path,
    SPLITDANCE_BATCH: task.batch,
    SPLITDANCE_ATTEMPT: String(task.attempt),
    ...(task.stage ? { SPLITDANCE_STAGE: task.stage } : {}),
  };
}
