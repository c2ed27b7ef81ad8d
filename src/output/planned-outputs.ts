import type { JobSettings } from '../job/job-definition.js';
import { outputFor, stageKey } from '../job/stages.js';
import type { TaskSpec } from '../store/task-store.js';
import { isUpToDate } from './freshness.js';
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
    const render = (s: OutputSpec, st: string, key: string) =>
      outputPath(s, { key, stage: st, batch, seq: 0, attempt: 1, payload: spec.payload, inputs: {} });
    const needed = (spec.needs ?? []).flatMap((need) => {
      const s = outputFor(settings, need);
      return s ? [render(s, need, stageKey(need, spec.item ?? spec.key))] : [];
    });
    return isUpToDate(render(own, stage, spec.key), [spec.payload.path, ...needed]);
  } catch {
    return false;
  }
}
