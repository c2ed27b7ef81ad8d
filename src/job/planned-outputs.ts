import type { JobSettings } from './job-definition.js';
import { outputFor, stageKey } from './stages.js';
import type { TaskSpec } from '../store/task-store.js';
import { inputsOf, isUpToDate } from '../output/freshness.js';
import { notReplaceable, storePathAt, type StorePaths } from '../replaceable-path.js';
import { outputPath, renderOutputPath, type OutputSpec } from '../output/output-path.js';

/**
 * `run --dry-run`'s view of declared outputs: whether a split task would be found up to date
 * (SPEC §4), from the files alone. A stage's needed outputs are rendered for the same item;
 * an output only a stage result can name ({inputs…}) is not known before it runs: not up to date.
 */
export function wouldBeUpToDate(settings: JobSettings, spec: TaskSpec, batch: string): boolean {
  const stage = spec.stage ?? '';
  const own = outputFor(settings, stage);
  if (own === null) return false;
  try {
    const needed = (spec.needs ?? []).flatMap((need) => {
      const s = outputFor(settings, need);
      return s ? [plannedPath(s, need, stageKey(need, spec.item ?? spec.key), spec, batch)] : [];
    });
    return isUpToDate(plannedPath(own, stage, spec.key, spec, batch), [...inputsOf(spec.payload, {}), ...needed]);
  } catch {
    return false;
  }
}

/**
 * A split task's output path before it is enqueued: its sequence number is not known yet, and
 * no needed stage has run (a template reading either throws, or renders without them).
 */
function plannedPath(s: OutputSpec, stage: string, key: string, spec: TaskSpec, batch: string, render = outputPath): string {
  return render(s, { key, stage, batch, seq: 0, attempt: 1, payload: spec.payload, inputs: {} });
}

/**
 * Why a batch's declared outputs cannot be written as planned, found before anything is:
 * two tasks on one output file (`out/{stem}.gz` for a.log and a.txt, `{name}` for the chunks of
 * one file, a constant path over two tasks) would overwrite, or pass for, each other's; an output
 * that is a task's input (its own, or another's) would destroy it; one at the store's own files
 * or in its folders would destroy the store; one where a folder, a symlink or a device is cannot
 * be replaced.
 */
export type OutputProblem =
  | { kind: 'collision'; first: string; second: string; path: string }
  | { kind: 'input'; key: string; path: string; owner: string }
  | { kind: 'store'; key: string; path: string; storePath: string }
  | { kind: 'blocked'; key: string; path: string; what: string };

/**
 * The first problem with the split tasks' declared outputs, or null. A pass keeps a 53-bit hash
 * per output and input path (flat memory on a million tasks); only hashes seen twice, or on both
 * sides, are rendered again to compare the paths themselves. Templates with `{#}` (unique per
 * task) or `{inputs…}` (known only once the needed stage ran) are not checked.
 */
export function findOutputProblem(settings: JobSettings, specs: () => Iterable<TaskSpec>, batch: string, store: StorePaths): OutputProblem | null {
  const checked = (stage: string) => {
    const s = outputFor(settings, stage);
    return s && !s.template.includes('{#}') && !s.template.includes('{inputs.') ? s : null;
  };
  const pathOf = (spec: TaskSpec): string | null => {
    const s = checked(spec.stage ?? '');
    if (!s) return null;
    try {
      return plannedPath(s, spec.stage ?? '', spec.key, spec, batch, renderOutputPath);
    } catch {
      return null; // fails for good when its task runs, naming why
    }
  };
  const seen = new Set<number>();
  const twice = new Set<number>();
  const inputs = new Set<number>();
  for (const spec of specs()) {
    inputs.add(hash53(spec.payload.path));
    const p = pathOf(spec);
    if (p === null) continue;
    const storePath = storePathAt(p, store);
    if (storePath !== null) return { kind: 'store', key: spec.key, path: p, storePath };
    const what = notReplaceable(p);
    if (what !== null) return { kind: 'blocked', key: spec.key, path: p, what };
    const h = hash53(p);
    if (seen.has(h)) twice.add(h);
    else seen.add(h);
  }
  for (const h of seen) if (inputs.has(h)) twice.add(h);
  if (twice.size === 0) return null;
  const owners = new Map<string, string>();
  const inputOwners = new Map<string, string>();
  for (const spec of specs()) {
    if (twice.has(hash53(spec.payload.path)) && !inputOwners.has(spec.payload.path)) inputOwners.set(spec.payload.path, spec.key);
  }
  for (const spec of specs()) {
    const p = pathOf(spec);
    if (p === null || !twice.has(hash53(p))) continue;
    const owner = inputOwners.get(p);
    if (owner !== undefined) return { kind: 'input', key: spec.key, path: p, owner };
    const first = owners.get(p);
    if (first !== undefined) return { kind: 'collision', first, second: spec.key, path: p };
    owners.set(p, spec.key);
  }
  return null;
}

/** Two 32-bit FNV-1a hashes of the UTF-16 units, folded into a 53-bit integer. */
function hash53(s: string): number {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
  }
  return (a >>> 0) * 0x200000 + ((b >>> 0) & 0x1fffff);
}
