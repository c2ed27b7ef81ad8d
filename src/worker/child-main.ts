/**
 * The worker process: loads the handler once, then runs one attempt at a time as the
 * coordinator asks, reporting each outcome. It never touches the store and never
 * decides retries. When the coordinator's channel closes it kills what it started and
 * exits, so a SIGKILLed coordinator leaves no orphans.
 */
import { serializeError } from '../errors.js';
import type { Handler } from './handler-types.js';
import { killGroup } from './kill-group.js';
import { loadHandler } from './load-handler.js';
import type { FromWorker, HandlerSpec, TaskMessage, ToWorker } from './protocol.js';
import { runExec } from './run-exec.js';
import { runModule } from './run-module.js';

/** Per stage ('' without stages): the spec, and the module's default export once loaded. */
const handlers = new Map<string, { spec: HandlerSpec; fn: Handler | null }>();
let killGraceMs = 2000;
let current: { token: number; pgid: number | null; abort(reason: string): void } | null = null;

const send = (msg: FromWorker) => process.send?.(msg);

process.on('message', (msg: ToWorker) => {
  if (msg.type === 'load') void load(msg.handlers, msg.killGraceMs);
  else if (msg.type === 'run') void run(msg.task);
  else if (msg.type === 'abort' && current?.token === msg.token) current.abort(msg.reason);
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

async function run(task: TaskMessage): Promise<void> {
  const env = taskEnv(task);
  const h = handlers.get(task.stage);
  if (!h) throw new Error(`no handler loaded for stage "${task.stage}"`); // the coordinator sends only stages it loaded
  const running =
    h.spec.kind === 'exec'
      ? runExec(h.spec.template, task, killGraceMs, env)
      : runModule(h.fn!, task, () => send({ type: 'heartbeat', token: task.token }));
  const pgid = 'pgid' in running ? (running.pgid as number | null) : null;
  current = { token: task.token, pgid, abort: (reason) => running.abort(reason) };
  if (pgid !== null) send({ type: 'spawned', token: task.token, pgid });
  const outcome = await running.done;
  current = null;
  send({ type: 'done', token: task.token, ...outcome, rss: process.memoryUsage.rss() });
}

function taskEnv(task: TaskMessage): NodeJS.ProcessEnv {
  return {
    ...process.env,
    SPLITDANCE_KEY: task.key,
    SPLITDANCE_PATH: task.payload.path,
    SPLITDANCE_BATCH: task.batch,
    SPLITDANCE_ATTEMPT: String(task.attempt),
    ...(task.stage ? { SPLITDANCE_STAGE: task.stage } : {}),
  };
}
