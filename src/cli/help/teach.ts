import { Option, type Command } from 'commander';
import { examplesText } from './examples.js';
import { groupOptions } from './option-groups.js';
import { placeholdersText } from './placeholders.js';

/**
 * What --help teaches beyond the option list, added once every command is defined: examples
 * for each command, the placeholders for `run`, options grouped for the commands that run a
 * pool, and the spellings of -j that other tools' users type (`--jobs`, `-P`).
 */
export function teach(program: Command): void {
  program.addHelpText('after', examplesText('splitdance'));
  for (const cmd of program.commands) {
    if (cmd.options.some((o) => o.long === '--exec')) cmd.addHelpText('after', placeholdersText());
    cmd.addHelpText('after', examplesText(cmd.name()));
    if (cmd.options.some((o) => o.long === '--concurrency')) acceptJobs(cmd);
    if (cmd.name() === 'run' || cmd.name() === 'worker') groupOptions(cmd);
  }
}

/** `--jobs N` and `-P N` (GNU parallel's and xargs' spellings) set -j; they are not listed. */
function acceptJobs(cmd: Command): void {
  for (const flags of ['--jobs <n>', '-P <n>']) {
    const alias = new Option(flags).hideHelp();
    cmd.addOption(alias);
    cmd.on(`option:${alias.name()}`, (value: string) => cmd.setOptionValueWithSource('concurrency', value, 'cli'));
  }
}
