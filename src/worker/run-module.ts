import { format } from 'node:util';
import { plainJson } from '../exact-json.js';
import { exactRecord } from '../template/item-values.js';
import { PermanentError, serializeError } from '../errors.js';
import { cutError, formatBytes, RESULT_MAX_BYTES } from '../stored-text.js';
import type { BatchHandler, Handler, Task } from './handler-types.js';
import { taskBytes } from './task-bytes.js';
import { OutputCapture, tailWithNote } from './output-capture.js';
import { PrintCopy } from './print-copy.js';
import type { DoneMessage, GroupItem, ItemOutcome, TaskMessage } from './protocol.js';
import { monotonicMs } from '../wall-steps.js';

export interface RunningModule {
  abort(reason: string): void;
  done: Promise<DoneMessage>;
}

type Write = typeof process.stdout.write;

/**
 * Runs one attempt of a module handler in this worker. While it runs, everything the
 * handler writes to stdout/stderr (console.log included) goes to the attempt's capture.
 */
export function runModule(handler: Handler | { batch: BatchHandler }, msg: TaskMessage, heartbeat: () => void): RunningModule {
  const started = Date.now();
  // The duration on the monotonic clock: a wall-clock step during the attempt must not make it negative.
  const clock = monotonicMs();
  const capture = new OutputCapture(msg.logFile);
  const controller = new AbortController();
  const copy = msg.print ? new PrintCopy(msg.print) : null;
  const restore = redirectOutput(capture, copy);
  const tasks = [msg, ...(msg.more ?? [])].map(taskOf);
  const ctx = {
    attempt: msg.attempt,
    slot: msg.slot ?? 1,
    signal: controller.signal,
    log: (...args: unknown[]) => capture.write(`${format(...args)}\n`),
    heartbeat,
  };

  const done = (async (): Promise<DoneMessage> => {
    let ok = false;
    let result: string | null = null;
    let error = null;
    let items: ItemOutcome[] | undefined;
    try {
      if (typeof handler === 'function') result = resultText(await handler(tasks[0]!, ctx));
      else items = itemOutcomes(await handler.batch(tasks, ctx), tasks.length);
      ok = true;
    } catch (err) {
      error = serializeError(err);
    } finally {
      restore();
    }
    // With --print, output that could not be kept for printing (a full TMPDIR) fails the attempt.
    const unprinted = copy?.close() ?? null;
    if (unprinted !== null) {
      if (ok) error = { name: 'Error', message: unprinted, retryable: true };
      else if (error) error = { ...error, message: cutError(`${error.message}; ${unprinted}`) };
      ok = false;
      result = null;
      items = undefined;
    }
    const { outputTail, logPath, note } = capture.finish();
    // Rounded down: `started` is the wall clock in whole ms, rounded down too, so start + duration
    // never passes the real end, and the next attempt of this worker never seems to overlap it.
    return { token: msg.token, ok, result, error, exitCode: null, signal: null, outputTail: tailWithNote(outputTail, note), logPath, durationMs: Math.floor(monotonicMs() - clock), startedAt: started, ...(items ? { items } : {}) };
  })();

  return {
    abort(reason: string) {
      controller.abort(new Error(`aborted: ${reason}`));
    },
    done,
  };
}

/** What a handler receives for one task (or item of a group). */
function taskOf(msg: TaskMessage | GroupItem): Task {
  return {
    key: msg.key,
    batch: msg.batch,
    stage: msg.stage,
    path: msg.payload.path,
    rel: msg.payload.rel,
    start: msg.payload.start,
    end: msg.payload.end,
    ...(msg.payload.item !== undefined ? { item: msg.payload.item } : {}),
    // Read again from the line: a record stored by an older version holds numbers rounded to a double.
    ...(msg.payload.record !== undefined ? { record: plainJson(exactRecord(msg.payload)) } : {}),
    read: () => taskBytes(msg.payload),
    attempt: msg.attempt,
    payload: msg.payload,
    inputs: msg.inputs,
    ...('output' in msg && msg.output ? { out: msg.output.temp } : {}),
  };
}

/** A result as stored: JSON text, bounded (checked here, so the coordinator never holds a huge one: a 300 MB result made a 2.8 GB coordinator). */
function resultText(value: unknown): string | null {
  const result = value === undefined ? null : JSON.stringify(value) ?? null;
  if (result !== null && result.length > RESULT_MAX_BYTES / 3 && Buffer.byteLength(result) > RESULT_MAX_BYTES) {
    const size = Buffer.byteLength(result);
    throw new PermanentError(`the result is ${formatBytes(size)} of JSON, above the limit of ${formatBytes(RESULT_MAX_BYTES)}: write big data to a file and return its path`);
  }
  return result;
}

/**
 * What a `batch` call returned, item by item: an Error is that item's failure, anything else
 * its result. Anything but an array of one entry per task fails the whole call.
 */
function itemOutcomes(values: unknown, n: number): ItemOutcome[] {
  if (!Array.isArray(values) || values.length !== n) {
    const got = Array.isArray(values) ? `an array of ${values.length}` : values === undefined ? 'nothing' : typeof values;
    throw new Error(`batch(tasks, ctx) must return an array of one result (or Error) per task, ${n} here; it returned ${got}`);
  }
  return values.map((v): ItemOutcome => {
    if (v instanceof Error) return { ok: false, result: null, error: serializeError(v) };
    try {
      return { ok: true, result: resultText(v), error: null };
    } catch (err) {
      return { ok: false, result: null, error: serializeError(err) };
    }
  });
}

function redirectOutput(capture: OutputCapture, copy: PrintCopy | null): () => void {
  const out = process.stdout.write;
  const err = process.stderr.write;
  const into = (stream: 'out' | 'err') =>
    ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      const buf = typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk);
      capture.write(buf);
      copy?.write(stream, buf);
      const cb = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
      cb?.();
      return true;
    }) as Write;
  process.stdout.write = into('out');
  process.stderr.write = into('err');
  return () => {
    process.stdout.write = out;
    process.stderr.write = err;
  };
}
