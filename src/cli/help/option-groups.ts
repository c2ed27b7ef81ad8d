import type { Command, Option } from 'commander';

/**
 * The headings `run --help` (and `worker --help`) sorts its options under. Options are placed
 * by name after the command is defined, so one added anywhere in program.ts lands in its group
 * when it is listed here, and under OTHER (never lost, never misfiled) when it is not. Names of
 * options still to come may be listed ahead of them.
 */
const GROUPS: [heading: string, options: string[]][] = [
  [
    'Source and batch:',
    ['--job', '--batch', '--include', '--exclude', '--chunk-size', '--block', '--lines', '--finished', '--items', '--jsonl', '--key-field', '--colsep', '--null', '--delimiter', '--arg-file', '--sample', '--rerun-changed', '--dry-run'],
  ],
  ['Handler and workers:', ['--exec', '--handler', '--pipe', '--max-args', '--max-replace-args', '--xargs', '-m', '--max-items', '--concurrency', '--max-tasks-per-worker', '--max-worker-memory', '--follow']],
  ['Order and flow:', ['--order', '--shuf', '--priority', '--rate', '--rate-key', '--adaptive']],
  ['Batch hooks:', ['--on-complete', '--on-failure']],
  [
    'Retries and time:',
    ['--retries', '--backoff', '--backoff-factor', '--max-backoff', '--jitter', '--timeout', '--heartbeat-timeout', '--permanent-codes', '--permanent-errors', '--retry-quiet', '--busy-codes', '--max-busy', '--max-failures', '--max-runtime', '--no-wait', '--grace', '--load-timeout', '--lease'],
  ],
  [
    'Output:',
    ['--output', '--force', '--print', '--tag', '--keep-order', '--line-buffer', '--results', '--json', '--quiet', '--verbose', '--color', '--no-color', '--progress-interval', '--metrics-file'],
  ],
  ['Store:', ['--db', '--trust-store-owner', '--history-warn']],
];

/** Where an option nobody listed goes. */
export const OTHER = 'Other options:';

/** The heading of an option, by its long flag (or its short one when it has none). */
function groupOf(flag: string): string {
  for (const [heading, names] of GROUPS) if (names.includes(flag)) return heading;
  return OTHER;
}

const flagOf = (o: Option) => o.long ?? o.short ?? '';

/** Where the option goes in the listing: by its group, then by its place in the group's list. */
function rank(o: Option): number {
  const flag = flagOf(o);
  const g = GROUPS.findIndex(([, names]) => names.includes(flag));
  return g < 0 ? GROUPS.length * 1000 : g * 1000 + GROUPS[g]![1].indexOf(flag);
}

/**
 * Sorts the command's options under the headings, in the order above (commander lists a group
 * where its first option stands, and the order of `options` does not change parsing). Help and
 * version stay under "Options:".
 */
export function groupOptions(cmd: Command): void {
  const options = cmd.options as Option[];
  for (const option of options) option.helpGroup(groupOf(flagOf(option)));
  const sorted = options.map((o, i) => [o, rank(o), i] as const).sort((a, b) => a[1] - b[1] || a[2] - b[2]);
  options.splice(0, options.length, ...sorted.map(([o]) => o));
}
