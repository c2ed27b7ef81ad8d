import type { Command } from 'commander';

/**
 * The commands and options as data, read from the commander program that --help prints: the
 * one source of the shell completions and the man page, so neither can drift from --help.
 */
export interface OptionModel {
  long?: string;
  short?: string;
  /** Its value's name (`<n>`), or undefined for a flag. */
  value?: string;
  description: string;
  /** Its --help heading, when the command groups its options. */
  group?: string;
  /** What its value completes to. */
  completes: 'batches' | 'statuses' | 'files' | 'shells' | 'none';
}

export interface CommandModel {
  name: string;
  usage: string;
  description: string;
  options: OptionModel[];
  /** Whether its operand is a path (run's source). */
  fileOperand: boolean;
  /** Whether its operand is a task key (show, logs): completed from the batch's keys. */
  keyOperand: boolean;
}

const FILE_VALUES = new Set(['--db', '--job', '--handler', '--html', '--metrics-file', '--items', '--arg-file', '--results']);

function completes(long: string | undefined): OptionModel['completes'] {
  if (long === '--batch') return 'batches';
  if (long === '--status') return 'statuses';
  if (long !== undefined && FILE_VALUES.has(long)) return 'files';
  return 'none';
}

/** Every listed command of the program, with its listed options (hidden ones left out). */
export function commandModel(program: Command): CommandModel[] {
  return program.commands
    .filter((c) => !(c as unknown as { _hidden?: boolean })._hidden)
    .map((c) => ({
      name: c.name(),
      usage: c.usage(),
      description: c.description(),
      fileOperand: c.registeredArguments.some((a) => a.name() === 'source'),
      keyOperand: c.registeredArguments.some((a) => a.name() === 'key'),
      options: c.options
        .filter((o) => !o.hidden)
        .map((o) => ({
          long: o.long,
          short: o.short,
          value: o.required || o.optional ? /[<[][^>\]]*[>\]]/.exec(o.flags)?.[0] : undefined,
          description: o.description,
          group: o.helpGroupHeading,
          completes: c.name() === 'completion' ? 'none' : completes(o.long),
        })),
    }));
}

/** Statuses `tasks --status` takes. */
export const STATUSES = ['PENDING', 'RUNNING', 'SUCCESS', 'FAILED', 'CANCELLED', 'retrying'];
export const SHELLS = ['bash', 'zsh', 'fish'];
