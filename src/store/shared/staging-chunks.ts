/** The specs of an enqueue, cut into the chunks both stores stage at a time. */
import type { TaskSpec } from '../records.js';

/** Specs per staging chunk: one round trip (PostgreSQL) or one transaction (SQLite) each. */
const STAGING_ROWS = 5000;
/**
 * Payload bytes per staging chunk. A list's items are small, but a block of stdin (`run -
 * --pipe`) holds up to 16 MiB: 5000 of them would be 80 GB in memory at once. A chunk ends
 * when either bound is reached, so it holds about 16 MiB of payloads (plus its last one),
 * whatever the source: a 200 MB stream was staged within a 64 MB V8 heap.
 */
const STAGING_BYTES = 16 * 1024 * 1024;

/** A spec as staged: its payload as stored (JSON text, made once), the parsed one let go. */
export interface StagedSpec {
  spec: Omit<TaskSpec, 'payload'>;
  payload: string;
}

/** `specs`, a chunk at a time, each with its payload's text. */
export function* stagingChunks(specs: Iterable<TaskSpec>, rows = STAGING_ROWS, bytes = STAGING_BYTES): Generator<StagedSpec[]> {
  let chunk: StagedSpec[] = [];
  let size = 0;
  for (const spec of specs) {
    const { payload: parsed, ...rest } = spec;
    const payload = JSON.stringify(parsed);
    chunk.push({ spec: rest, payload });
    size += payload.length;
    if (chunk.length >= rows || size >= bytes) {
      yield chunk;
      chunk = [];
      size = 0;
    }
  }
  if (chunk.length) yield chunk;
}
