/** `-n N` / `-N N` / `-X` / `-m` (SPEC §10): one `--exec` command for many items. */
import type { ExecCommand } from './exec-command.js';
import type { TemplateTask } from './template-task.js';

/** How the item placeholders of a template expand for a group (GNU parallel's -n, -N, -X, -m). */
export type GroupMode = 'n' | 'N' | 'X' | 'm';

/** Renders `template` for a group of tasks (at least one), each value exact. */
export function renderGroup(template: string, tasks: TemplateTask[], mode: GroupMode): ExecCommand {
  throw new Error(`not yet: ${template} ${tasks.length} ${mode}`);
}

/** Refuses (UsageError) a template whose item placeholders cannot expand to many items exactly under `mode`. */
export function checkGroupTemplate(template: string, mode: GroupMode, what: string): void {
  void [template, mode, what];
}
