/** The checks a plan makes once its layers are merged: the batch as stored against this run's source, stages and file, and the store's own files it keeps out. */
import { realpathSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { UsageError } from '../errors.js';
import type { JobSettings } from './job-definition.js';
import type { OutputProblem } from './planned-outputs.js';
import { layoutOf } from './stages.js';
import { formatMs } from './units.js';
import { checkTemplate, shellQuote } from '../template/exec-template.js';
import { checkRateKey } from '../template/rate-key.js';
import { plural, printable } from '../printable.js';
import { compareFile, firstState, STILL_MS, type LeftTail } from '../split/file-growth.js';

/** What planning needs to know of a batch already in the store: only its stored definition. */
export interface StoredBatch {
  job: unknown;
  /** The source it was split from (absolute): another one is never merged into it. */
  source: string;
}

/** An exit code cannot both fail a task for good and mean "busy, try later". */
export function checkBusyCodes(settings: JobSettings): void {
  for (const codes of [settings.permanentCodes, ...settings.stages.map((s) => s.permanentCodes ?? [])]) {
    const both = codes.filter((c) => settings.busyCodes.includes(c));
    if (both.length) {
      throw new UsageError(`exit code ${both.join(', ')} is in both --permanent-codes and --busy-codes (default 75); give it to one of them (--busy-codes none: no code means busy)`);
    }
  }
}

/**
 * --rate-key: the rate it applies per key must be there when it is given (a stored key whose rate
 * `set --rate none` lifted limits nothing, and is no error), and the template must render from
 * what a stored task has.
 */
export function checkKeyedRate(settings: JobSettings, items: boolean, given: boolean): void {
  if (settings.rateKey === null || (settings.rate === null && !given)) return;
  if (settings.rate === null) {
    throw new UsageError(`--rate-key applies the batch's --rate per key, and the batch has no rate: add --rate N/s, e.g. --rate 5/s --rate-key ${shellQuote(settings.rateKey)}`);
  }
  checkRateKey(settings.rateKey, items);
}

/** One line for a planned output that cannot be written: what, where, and the way out. */
export function outputProblemMessage(problem: OutputProblem, settings: JobSettings): string {
  const stage = 'key' in problem ? problem.key : problem.first;
  const field = settings.output ? `--output ${JSON.stringify(settings.output.template)}` : `the "output" of stage ${JSON.stringify(stage.split('/')[0])}`;
  const path = printable(problem.path);
  switch (problem.kind) {
    case 'collision':
      return `${field} gives two tasks one output file: ${printable(problem.first)} and ${printable(problem.second)} both write ${path}; use a placeholder that tells them apart ({rel} or {key})`;
    case 'input':
      return problem.owner === problem.key
        ? `${field} is the input file itself for ${printable(problem.key)} (${path}); write the output elsewhere`
        : `${field} would overwrite the input of ${printable(problem.owner)}: ${printable(problem.key)} writes ${path}; write the outputs elsewhere`;
    case 'store':
      return `${field} would write ${path}, the store's ${printable(problem.storePath)} (for ${printable(problem.key)}); writing there would destroy the store: write the outputs elsewhere`;
    case 'blocked':
      return `${field}: ${path} (for ${printable(problem.key)}) is ${problem.what}, not a regular file; splitdance replaces only regular files: remove it or write the outputs elsewhere`;
  }
}

/**
 * A batch belongs to one source: a second folder merged into it would have its files with
 * existing keys never run, and the fingerprint check would then report changes that are not.
 * The same folder reached another way (a symlink, `./x` vs `x/`) is the same source.
 */
export function checkSameSource(stored: string, given: string, batch: string): void {
  const real = realOrNull(stored);
  if (stored === given || (real !== null && real === realOrNull(given))) return;
  throw new UsageError(
    `batch ${printable(batch)} was split from ${printable(stored)}, not ${printable(given)}: ` +
      `run it with its own source, or give ${printable(given)} a batch of its own (--batch NEW)`,
  );
}

function realOrNull(path: string): string | null {
  try {
    return realpathSync(path);
  } catch {
    return null;
  }
}

/**
 * Stages and a single handler exclude each other, and a batch keeps the stage layout
 * (names and needs) it was created with: its task keys are built from it.
 */
export function checkStages(settings: JobSettings, stored: JobSettings, existing: StoredBatch | undefined, batch: string, handlerGiven: boolean): void {
  if (existing && layoutOf(stored.stages) !== layoutOf(settings.stages)) {
    throw new UsageError(
      `batch ${batch} was created with ${layoutOf(stored.stages)}, not ${layoutOf(settings.stages)}; ` +
        'task keys follow the stages, so use a new --batch for a different pipeline',
    );
  }
  if (settings.stages.length === 0) return;
  if (handlerGiven || settings.handler) {
    throw new UsageError(`batch ${batch} has stages, each with its own handler; --exec/--handler cannot replace them (edit the stages in the job file)`);
  }
  if (settings.output) throw new UsageError(`batch ${batch} has stages: each declares its own "output" in the job file; --output cannot give them one`);
  for (const s of settings.stages) if (s.handler.kind === 'exec') checkTemplate(s.handler.template, s.needs, s.output !== undefined, settings.items !== null, `stage "${s.name}"'s exec`);
}

/**
 * A chunked file is never run with stale ranges (SPEC §3): a new batch records the file's
 * size and hash; a batch whose file only grew at its end gets a new segment; a file that
 * changed otherwise, or a new chunk size, is exit 2 before anything is written. A batch stored
 * without a hash is chunked as before. A last line without a newline waits for a later run
 * unless the file is still or `--finished` (file-growth.ts): the notes say so.
 */
export function checkFile(
  source: string,
  settings: JobSettings,
  stored: JobSettings,
  existing: StoredBatch | undefined,
  changed: string[],
  batch: string,
  flags: { rerunChanged: boolean; finished: boolean },
): { grew: boolean; notes: string[] } {
  const name = printable(basename(source));
  const fix = `run it as a new batch: --batch NEW (e.g. --batch ${printable(batch)}-2)`;
  if (existing && (changed.includes('chunkSize') || changed.includes('lines'))) {
    throw new UsageError(`batch ${printable(batch)} chunked ${name} ${stored.lines ? `every ${stored.lines} lines` : `in chunks of ${stored.chunkSize} bytes`}; its task keys stand for those ranges, so a new chunking needs a new batch: ${fix}`);
  }
  const rule = { finished: flags.finished, now: Date.now() };
  if (!existing) {
    const first = firstState(source, rule);
    if (first.left && first.state.sizes[0] === 0) {
      throw new UsageError(`${name} holds no whole line yet: ${leftText(first.left)}`);
    }
    settings.fileState = first.state;
    return { grew: false, notes: first.left ? [`${name}: ${leftText(first.left)}`] : [] };
  }
  if (!stored.fileState) return { grew: false, notes: [] };
  const growth = compareFile(source, stored.fileState, rule);
  if (growth.kind === 'changed') {
    throw new UsageError(
      `${name} changed since batch ${printable(batch)} chunked it: ${growth.why}, so its chunks' byte ranges no longer fit it and none of them is run` +
        `${flags.rerunChanged ? ' (--rerun-changed would run them on the wrong bytes)' : ''}; ${fix}`,
    );
  }
  const notes = growth.left ? [`${name}: ${leftText(growth.left)}`] : [];
  if (growth.kind === 'same') return { grew: false, notes };
  settings.fileState = growth.state;
  return { grew: true, notes: [`${name} grew by ${growth.added} bytes since it was chunked: the new bytes get new chunks, the old chunks keep their ranges`, ...notes] };
}

/** Why a file's last bytes wait, and what takes them. */
function leftText(left: LeftTail): string {
  return (
    `its last line (${plural(left.bytes, 'byte')}) has no newline and the file changed ${formatMs(left.ageMs)} ago, so that line may still be being written: ` +
    `it waits for a run after it ends with a newline or the file has been still for ${formatMs(STILL_MS)}; --finished runs it now`
  );
}

/** The store's own files, never split even when the store lives inside the source. */
export function storeFiles(dbPath: string): string[] {
  const dir = dirname(dbPath);
  const own = [dbPath, `${dbPath}-wal`, `${dbPath}-shm`, `${dbPath}-journal`, join(dir, 'logs')];
  return basename(dir) === '.splitdance' ? [...own, dir] : own;
}
