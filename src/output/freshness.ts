import { lstatSync, statSync } from 'node:fs';

/**
 * Whether a task's output is up to date (SPEC §4): it is a regular file modified after every
 * input — the task's file and, for a stage, the outputs of the stages it needs, as `make`
 * does. Nanosecond times, so an input touched within the same millisecond still counts; an
 * input that is gone makes the task run (and fail, saying why).
 */
export function isUpToDate(output: string, inputs: string[]): boolean {
  const out = outputMtimeNs(output);
  if (out === null) return false;
  for (const input of inputs) {
    const m = mtimeNs(input);
    if (m === null || m >= out) return false;
  }
  return true;
}

/** The output's time, if it is a regular file: a folder, a symlink or a device there is no output. */
function outputMtimeNs(path: string): bigint | null {
  try {
    const st = lstatSync(path, { bigint: true });
    return st.isFile() ? st.mtimeNs : null;
  } catch {
    return null;
  }
}

function mtimeNs(path: string): bigint | null {
  try {
    return statSync(path, { bigint: true }).mtimeNs;
  } catch {
    return null;
  }
}

/**
 * The files a task's output must be newer than: its own file, but not for an item of a list
 * or a block of stdin, whose content is its key (an item never changes, and editing the list
 * must not make every output stale), then the outputs of the stages it needs.
 */
export function inputsOf(payload: { path: string; item?: string; block?: string }, inputs: Record<string, unknown>): string[] {
  return [...(payload.item === undefined && payload.block === undefined ? [payload.path] : []), ...neededOutputs(inputs)];
}

/** The declared outputs of the needed stages, from their stored results (`{ out }`). */
function neededOutputs(inputs: Record<string, unknown>): string[] {
  const outs: string[] = [];
  for (const result of Object.values(inputs)) {
    const out = result !== null && typeof result === 'object' && Object.hasOwn(result, 'out') ? (result as { out: unknown }).out : undefined;
    if (typeof out === 'string') outs.push(out);
  }
  return outs;
}
