/** The task as the placeholder language reads it: exactly what rendering a template needs, and no more. */
import type { TaskPayload } from '../store/task-store.js';

/**
 * What `{out}` reads of the attempt's declared output: the temporary file the attempt writes
 * (the output stage renames it onto the output path after a success; the template never sees
 * that path). A structural slice, so output/'s paths and the worker's message are one without
 * a conversion, and template/ needs nothing from the floors above it.
 */
interface TemplateOutput {
  temp: string;
}

/**
 * One task, as `--exec` and `--output` placeholders (SPEC §4) read it. The worker's IPC message
 * and a coordinator's claimed task are supersets and pass as they are; the planning pass, which
 * renders output paths before any attempt exists, has no `output` (only `{out}` reads it).
 */
export interface TemplateTask {
  key: string;
  batch: string;
  /** '' for a batch without stages. */
  stage: string;
  /** `{#}`: the task's sequence number in its batch. */
  seq: number;
  attempt: number;
  /**
   * `{%}`: the pool's slot the attempt runs in, 1…`-j` (GNU parallel's job slot): no two
   * attempts running at once in one pool share it. Set when the attempt is handed out; the
   * planning pass has none.
   */
  slot?: number;
  payload: TaskPayload;
  /** The stored results of the stages it needs, by stage (empty without stages): `{inputs.STAGE.FIELD}`. */
  inputs: Record<string, unknown>;
  output?: TemplateOutput | null;
}
