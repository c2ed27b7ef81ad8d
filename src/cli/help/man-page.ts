import type { CommandModel } from './command-model.js';
import { EXAMPLES } from './examples.js';
import { PLACEHOLDER_HELP } from './placeholders.js';

/**
 * splitdance(1), in roff (man(7) macros), from the same commands, options, examples and
 * placeholders as --help; `npm run build` writes it to splitdance.1 and the package ships it.
 */
const EXIT_CODES: [string, string][] = [
  ['0', 'every task SUCCESS'],
  ['1', 'the batch ended with FAILED (or CANCELLED) tasks, or --max-failures stopped it'],
  ['2', 'usage error or bad input; nothing was written'],
  ['3', 'incomplete: paused, --max-runtime reached, --no-wait left delayed retries, or a declared output could not be renamed into place'],
  ['4', 'store error: missing, unreadable, locked, corrupt, foreign or from a newer version (never modified)'],
  ['130, 143', 'interrupted by SIGINT, SIGTERM; run again to resume'],
];

/** Text made safe for roff: backslashes and dashes escaped, no line starting with a dot or quote. */
function roff(text: string): string {
  return text
    .replace(/\\/g, '\\e')
    .replace(/-/g, '\\-')
    .replace(/^([.'])/gm, '\\&$1');
}

function item(term: string, body: string): string {
  return `.TP\n.B ${roff(term)}\n${roff(body)}`;
}

function optionTerm(o: CommandModel['options'][number]): string {
  return [o.short, o.long].filter(Boolean).join(', ') + (o.value ? ` ${o.value}` : '');
}

function section(c: CommandModel): string {
  const out = [`.SS "splitdance ${roff(c.name)} ${roff(c.usage)}"`, roff(c.description)];
  let group: string | undefined;
  for (const o of c.options) {
    if (o.group && o.group !== group) out.push(`.PP\n.I ${roff(o.group)}`);
    group = o.group;
    out.push(item(optionTerm(o), o.description));
  }
  const examples = EXAMPLES[c.name] ?? [];
  if (examples.length) {
    out.push('.PP\nExamples:');
    for (const [cmd, what] of examples) out.push(`.RS\n.nf\n${roff(cmd)}\n.fi\n.RE\n${roff(what)}`);
  }
  return out.join('\n');
}

export function manPage(commands: CommandModel[], version: string): string {
  return [
    `.TH SPLITDANCE 1 "" "splitdance ${roff(version)}" "User Commands"`,
    '.SH NAME',
    'splitdance \\- split a directory or a big file into tasks and run them reliably, resumable after any crash',
    '.SH SYNOPSIS',
    '.B splitdance',
    '.I command',
    '[\\fIoptions\\fR]',
    '.SH DESCRIPTION',
    roff(
      'splitdance makes one task per file of a directory (or line-aligned chunks of one big file), keeps every task in a SQLite task table (or a shared PostgreSQL one), runs them on a bounded pool of long-lived worker processes with --exec or a JavaScript handler module, retries failures with exponential backoff, and resumes after any crash: run the same command again and only unfinished work runs. Every task ends in exactly one terminal state; an attempt repeats only after a crash or a power loss.',
    ),
    '.SH COMMANDS',
    ...commands.map(section),
    '.SH PLACEHOLDERS',
    roff('In --exec and --output templates; each value is shell-quoted for where it stands. Values shown for /data/logs/2025/01/app.log, key 2025/01/app.log.'),
    ...PLACEHOLDER_HELP.map(([spellings, meaning]) => item(spellings.join(' '), meaning)),
    '.SH EXIT STATUS',
    ...EXIT_CODES.map(([code, meaning]) => item(code, meaning)),
    '.SH ENVIRONMENT',
    item('SPLITDANCE_DB', 'the store, when --db is not given: a SQLite file or a postgres:// URL'),
    item('NO_COLOR', 'no colours in human text'),
    '.SH FILES',
    item('.splitdance/splitdance.db', 'the default store, under the current directory'),
    item('.splitdance/logs/', "each attempt's captured output"),
    item('splitdance.json', 'the job file read from the current directory when present, unless the command line gives --exec or --handler'),
    '.SH SEE ALSO',
    roff('parallel(1), xargs(1); the README and docs/ of the package.'),
    '',
  ].join('\n');
}
