import type { JobSettings } from '../job/job-definition.js';
import { outputFor, stageKey } from '../job/stages.js';
import type { TaskSpec } from '../store/task-store.js';
import { inputsOf, isUpToDate } from './freshness.js';
import { outputPath, type OutputSpec } from './output-path.js';

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
function plannedPath(s: OutputSpec, stage: string, key: string, spec: TaskSpec, batch: string): string {
  return outputPath(s, { key, stage, batch, seq: 0, attempt: 1, payload: spec.payload, inputs: {} });
}

/** Two tasks whose declared outputs are one file: each would overwrite, or pass for, the other's. */
export interface OutputCollision {
  first: string;
  second: string;
  path: string;
}

/**
 * The first two split tasks (of one stage) whose declared outputs render to the same path
 * (`out/{stem}.gz` for a.log and a.txt, `{name}` for the chunks of one file), or null. One task
 * would then be recorded up to date on the other's output. A pass keeps a 53-bit hash per path
 * (flat memory on a million tasks); only hashes seen twice are rendered again to compare the
 * paths themselves. Templates with `{#}` (unique per task) or `{inputs…}` (known only once the
 * needed stage ran) are not checked.
 */
export function findOutputCollision(settings: JobSettings, specs: () => Iterable<TaskSpec>, batch: string): OutputCollision | null {
  const checked = (stage: string) => {
    const s = outputFor(settings, stage);
    return s && !s.template.includes('{#}') && !s.template.includes('{inputs.') ? s : null;
  };
  const pathOf = (spec: TaskSpec): string | null => {
    const s = checked(spec.stage ?? '');
    if (!s) return null;
    try {
      return plannedPath(s, spec.stage ?? '', spec.key, spec, batch);
    } catch {
      return null; // fails for good when its task runs, naming why
    }
  };
  const seen = new Set<number>();
  const twice = new Set<number>();
  for (const spec of specs()) {
    const p = pathOf(spec);
    if (p === null) continue;
    const h = hash53(p);
    if (seen.has(h)) twice.add(h);
    else seen.add(h);
  }
  if (twice.size === 0) return null;
  const owners = new Map<string, string>();
  for (const spec of specs()) {
    const p = pathOf(spec);
    if (p === null || !twice.has(hash53(p))) continue;
    const first = owners.get(p);
    if (first !== undefined) return { first, second: spec.key, path: p };
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
