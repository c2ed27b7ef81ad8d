import type { JobSettings } from '../job/job-definition.js';
import { outputFor } from '../job/stages.js';
import { readdirSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { discardOutput } from '../output/commit-output.js';
import { inputsOf, isUpToDate } from '../output/freshness.js';
import { isProblem, walkOutputFolders } from '../output/output-folders.js';
import { outputPath, outputPathsOf, tempPrefixOf, type OutputPaths, type OutputSpec } from '../output/output-path.js';
import type { ClaimedTask, LostAttempt } from '../store/task-store.js';

/** A claimed task's declared output: its paths, or why it has none it could write (a hostile value). */
export type TaskOutput = { paths: OutputPaths } | { error: string } | null;

/**
 * The coordinator's side of declared outputs (SPEC §4): each attempt's paths, the up-to-date
 * check made before an attempt is handed to a worker, the `{ out }` stored in a success's
 * result (what `{inputs.STAGE.out}` reads), and removing what dead attempts left behind.
 */
export class DeclaredOutputs {
  private readonly specs = new Map<string, OutputSpec | null>();

  constructor(
    settings: JobSettings,
    private readonly batch: string,
    /** `--force`: never skip a task as up to date. */
    private readonly force: boolean,
    /** The store's identity: part of every temporary name, so two stores never share one. */
    private readonly store: string,
  ) {
    for (const stage of settings.stages.length ? settings.stages.map((s) => s.name) : ['']) this.specs.set(stage, outputFor(settings, stage));
  }

  of(task: ClaimedTask): TaskOutput {
    const spec = this.specs.get(task.stage) ?? null;
    if (spec === null) return null;
    try {
      return { paths: outputPathsOf(spec, { ...task, batch: this.batch }, this.store, task.token) };
    } catch (err) {
      return { error: (err as Error).message };
    }
  }

  /**
   * Whether the task need not run: its output is newer than its file and the outputs of the
   * stages it needs (never for a record re-queued by `--rerun-changed`). A file reached through a link in its folders is no output (its attempt
   * fails naming the link).
   */
  upToDate(task: ClaimedTask, paths: OutputPaths): boolean {
    if (this.force || task.payload.rerun === true) return false;
    return isUpToDate(paths.path, inputsOf(task.payload, task.inputs)) && !isProblem(walkOutputFolders(paths, false));
  }

  /** Whether any stage of the batch declares an output. */
  get declared(): boolean {
    return [...this.specs.values()].some((s) => s !== null);
  }

  /**
   * The folders the batch's outputs go under: each template's text before its first
   * placeholder, up to its last `/` (`out/{rel}.gz` → `BASE/out`; `{}.gz` → `/`, since `{}` is absolute).
   */
  get folders(): string[] {
    return [...this.specs.values()].flatMap((s) => (s === null ? [] : [folderOf(s)]));
  }

  /**
   * Temporary files of attempts recovery finds lost (their owner died): no one else will remove
   * them. Their names end in random digits, so they are found by the store's and the attempt's prefix.
   */
  discardLost(released: LostAttempt[]): void {
    for (const t of released) {
      const spec = this.specs.get(t.stage) ?? null;
      if (spec === null || t.token === null) continue;
      let prefix: string;
      try {
        prefix = tempPrefixOf(outputPath(spec, { ...t, batch: this.batch, attempt: 0, inputs: t.inputs ?? {} }), this.store, t.token);
      } catch {
        continue; // a path its stage results could not render: that attempt never had a temporary file
      }
      let names: string[];
      try {
        names = readdirSync(dirname(prefix));
      } catch {
        continue; // no folder: nothing was written
      }
      for (const name of names) if (name.startsWith(basename(prefix)) && name.endsWith('.tmp')) discardOutput({ temp: join(dirname(prefix), name) });
    }
  }
}

function folderOf(spec: OutputSpec): string {
  const at = spec.template.indexOf('{');
  if (at < 0) return dirname(resolve(spec.base, spec.template));
  const fixed = spec.template.slice(0, at);
  return fixed === '' ? '/' : resolve(spec.base, fixed.slice(0, fixed.lastIndexOf('/') + 1) || '.');
}

/**
 * A success's stored result with its output path: `{ out }` over the handler's object
 * result, or `{ out, value }` for any other result, so later stages read `{inputs.STAGE.out}`.
 */
export function resultWithOut(result: string | null | undefined, out: string): string {
  const value: unknown = result ? JSON.parse(result) : null;
  if (value === null) return JSON.stringify({ out });
  if (typeof value === 'object' && !Array.isArray(value)) return JSON.stringify({ ...value, out });
  return JSON.stringify({ out, value });
}
