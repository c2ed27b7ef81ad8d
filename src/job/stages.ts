import { UsageError } from '../errors.js';
import type { TaskSpec } from '../store/task-store.js';
import type { OutputSpec } from '../output/output-path.js';
import type { HandlerSpec } from '../worker/protocol.js';
import { settingsOf, type JobDefinition, type JobSettings, type StageDefinition } from './job-definition.js';

/** What a stage retries and times out with: its own fields over the job's. */
export type StagePolicy = Pick<JobSettings, 'retries' | 'backoffMs' | 'backoffFactor' | 'maxBackoffMs' | 'jitter' | 'timeoutMs' | 'permanentCodes' | 'permanentErrors' | 'heartbeatTimeoutMs' | 'retryQuiet'>;

/** The policy of `stage` ('' for a batch without stages). */
export function policyFor(settings: JobSettings, stage: string): StagePolicy {
  const own = settings.stages.find((s) => s.name === stage);
  return {
    retries: own?.retries ?? settings.retries,
    backoffMs: own?.backoffMs ?? settings.backoffMs,
    backoffFactor: own?.backoffFactor ?? settings.backoffFactor,
    maxBackoffMs: own?.maxBackoffMs ?? settings.maxBackoffMs,
    jitter: own?.jitter ?? settings.jitter,
    timeoutMs: own?.timeoutMs ?? settings.timeoutMs,
    permanentCodes: own?.permanentCodes ?? settings.permanentCodes,
    permanentErrors: own?.permanentErrors ?? settings.permanentErrors,
    heartbeatTimeoutMs: own?.heartbeatTimeoutMs ?? settings.heartbeatTimeoutMs,
    retryQuiet: own?.retryQuiet ?? settings.retryQuiet,
  };
}

/** The declared output of `stage` ('' for a batch without stages), or null. */
export function outputFor(settings: JobSettings, stage: string): OutputSpec | null {
  if (settings.stages.length === 0) return settings.output;
  return settings.stages.find((s) => s.name === stage)?.output ?? null;
}

/** Every stage's handler, keyed by stage ('' for a batch without stages). */
export function handlersOf(settings: JobSettings): Record<string, HandlerSpec> {
  if (settings.stages.length === 0) return settings.handler ? { '': settings.handler } : {};
  return Object.fromEntries(settings.stages.map((s) => [s.name, s.handler]));
}

/**
 * Whether workers that loaded the handlers of definition `a` serve `b` as well: the same
 * handler for every stage. Compared as JSON text: handler specs are plain data, built with
 * their fields in one order (run-options.ts, job-file.ts) and stored as text, which keeps it.
 */
export function sameHandlers(a: JobDefinition, b: JobDefinition): boolean {
  return JSON.stringify(handlersOf(settingsOf(a))) === JSON.stringify(handlersOf(settingsOf(b)));
}

/** The attempt budget (1 + retries): one number, or one per stage. */
export function budgetOf(settings: JobSettings): number | Record<string, number> {
  if (settings.stages.length === 0) return settings.retries + 1;
  return Object.fromEntries(settings.stages.map((s) => [s.name, policyFor(settings, s.name).retries + 1]));
}

/**
 * Rejects duplicate names, needs naming no stage, and cycles, each error naming them;
 * returns the stages in an order where every stage comes after the ones it needs.
 */
export function orderStages(stages: StageDefinition[]): StageDefinition[] {
  const names = stages.map((s) => s.name);
  const duplicate = names.find((n, i) => names.indexOf(n) !== i);
  if (duplicate !== undefined) throw new UsageError(`stages: the name "${duplicate}" is used twice; give every stage its own name`);
  for (const s of stages) {
    for (const need of s.needs) {
      if (need === s.name) throw new UsageError(`stages: "${s.name}" needs itself; remove it from its own needs`);
      if (!names.includes(need)) {
        throw new UsageError(`stages: "${s.name}" needs "${need}", which is not a stage (stages: ${names.join(', ')})`);
      }
    }
  }
  const byName = new Map(stages.map((s) => [s.name, s]));
  const ordered: StageDefinition[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (s: StageDefinition, path: string[]) => {
    if (state.get(s.name) === 'done') return;
    if (state.get(s.name) === 'visiting') {
      const cycle = [...path.slice(path.indexOf(s.name)), s.name];
      throw new UsageError(`stages: the needs form a cycle (${cycle.join(' → ')}); a stage cannot wait for itself`);
    }
    state.set(s.name, 'visiting');
    for (const need of s.needs) visit(byName.get(need)!, [...path, s.name]);
    state.set(s.name, 'done');
    ordered.push(s);
  };
  for (const s of stages) visit(s, []);
  return ordered;
}

/** A stage task's key: `stage/itemkey`. */
export function stageKey(stage: string, item: string): string {
  return `${stage}/${item}`;
}

/** One task per stage for every split item (item by item, needs first); the specs as they are without stages. */
export function* expandStages(items: Iterable<TaskSpec>, settings: JobSettings): Iterable<TaskSpec> {
  if (settings.stages.length === 0) {
    yield* items;
    return;
  }
  const stages = orderStages(settings.stages).map((s) => ({ ...s, maxAttempts: policyFor(settings, s.name).retries + 1 }));
  for (const item of items) {
    for (const s of stages) {
      yield { ...item, key: stageKey(s.name, item.key), stage: s.name, item: item.key, needs: s.needs, maxAttempts: s.maxAttempts };
    }
  }
}

/** The stage layout (names and needs) a batch was created with, to refuse changing it later. */
export function layoutOf(stages: StageDefinition[]): string {
  if (stages.length === 0) return 'no stages';
  const sorted = [...stages].sort((a, b) => (a.name < b.name ? -1 : 1));
  return `stages ${sorted.map((s) => (s.needs.length ? `${s.name} (needs ${[...s.needs].sort().join(', ')})` : s.name)).join(', ')}`;
}
