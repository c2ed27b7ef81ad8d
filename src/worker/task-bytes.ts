/** The bytes a task is about (`task.read()`, `--pipe`): an item, a block of stdin, a chunk's byte range, or a whole file. */
import { open, readFile } from 'node:fs/promises';
import type { TaskPayload } from '../store/task-store.js';

/** Where an attempt's stdin comes from with `--pipe`: bytes held in the payload, or a range of a file. */
export type TaskInput = { kind: 'bytes'; data: Buffer } | { kind: 'range'; path: string; start: number; end: number };

/** An item's exact bytes (a line that is not UTF-8 included), without its line end. */
function itemBytes(payload: TaskPayload & { item: string }): Buffer {
  return payload.bytes !== undefined ? Buffer.from(payload.bytes, 'base64') : Buffer.from(payload.item, 'utf8');
}

/** A block of stdin's exact bytes (`run - --pipe`), as stored with its task. */
function blockBytes(payload: TaskPayload & { block: string }): Buffer {
  return Buffer.from(payload.block, payload.base64 ? 'base64' : 'utf8');
}

/** A command's stdin: an item as a line of a list is (with its newline, so `read` and `wc -l` see one line); a block its bytes; a chunk its range. */
export function taskInput(payload: TaskPayload): TaskInput {
  if (payload.block !== undefined) return { kind: 'bytes', data: blockBytes(payload as TaskPayload & { block: string }) };
  if (payload.item !== undefined) return { kind: 'bytes', data: Buffer.concat([itemBytes(payload as TaskPayload & { item: string }), Buffer.from('\n')]) };
  return { kind: 'range', path: payload.path, start: payload.start ?? 0, end: payload.end ?? Number.POSITIVE_INFINITY };
}

/** `task.read()`: an item's bytes, or the chunk's (or whole file's). */
export async function taskBytes(payload: TaskPayload): Promise<Buffer> {
  if (payload.item !== undefined) return itemBytes(payload as TaskPayload & { item: string });
  const input = taskInput(payload);
  if (input.kind === 'bytes') return input.data;
  if (input.end === Number.POSITIVE_INFINITY) return readFile(input.path);
  const file = await open(input.path, 'r');
  try {
    const buf = Buffer.alloc(input.end - input.start);
    let got = 0;
    while (got < buf.length) {
      const { bytesRead } = await file.read(buf, got, buf.length - got, input.start + got);
      if (bytesRead === 0) break; // the file shrank since it was split: what is left
      got += bytesRead;
    }
    return buf.subarray(0, got);
  } finally {
    await file.close();
  }
}
