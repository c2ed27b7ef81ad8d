// Every command's flag errors, called in-process: a UsageError naming the flag, exit 2 with that line through main(), and nothing written.
import { readdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import type { Io } from '../../src/cli/io.js';
import { cancelCommand } from '../../src/cli/commands/cancel.js';
import { completionCommand } from '../../src/cli/commands/completion.js';
import { logsCommand } from '../../src/cli/commands/logs.js';
import { pruneCommand } from '../../src/cli/commands/prune.js';
import { statusCommand } from '../../src/cli/commands/status.js';
import { tasksCommand } from '../../src/cli/commands/tasks.js';
import { watchCommand } from '../../src/cli/commands/watch.js';
import { commandModel } from '../../src/cli/help/command-model.js';
import { buildProgram } from '../../src/cli/program.js';
import { tempDir } from '../helpers/cli.js';
import { captureIo, mainIn, shown, usageErrorOf } from '../helpers/in-process-cli.js';

const commands = commandModel(buildProgram({} as never, () => undefined));
const CPUS = availableParallelism();

describe('flags refused before any store is opened: the command throws, main() exits 2, the folder stays empty', () => {
  // [argv as typed, the command function called with what commander would give it, the message]
  const cases: [string[], (io: Io) => Promise<number>, string][] = [
    [['status', '--interval', '1s'], (io) => statusCommand({ interval: '1s' }, io), '--interval goes with --watch'],
    [['status', '--watch', '--json'], (io) => watchCommand({ json: true }, io) /* status --watch is routed to watch by the program */, 'watch has no --json: `status --json` prints one snapshot'],
    [['watch', '--json'], (io) => watchCommand({ json: true }, io), 'watch has no --json: `status --json` prints one snapshot'],
    [['watch', '--interval', '0s'], (io) => watchCommand({ interval: '0s' }, io), '--interval expects a duration above 0; got "0s"'],
    [['watch', '--interval', 'soon'], (io) => watchCommand({ interval: 'soon' }, io), '--interval expects a duration such as 500ms, 5s, 2m or 1h; got "soon"'],
    [
      ['tasks', '--key', ''],
      (io) => tasksCommand({ key: '' }, io),
      "--key is empty; give a non-empty value (is a shell variable unset?), or leave --key out to mean every task",
    ],
    [
      ['tasks', '--error', ' '],
      (io) => tasksCommand({ error: ' ' }, io),
      '--error is empty; give a non-empty value (is a shell variable unset?), or leave --error out to mean every task',
    ],
    [
      ['tasks', '--status', 'DONE'],
      (io) => tasksCommand({ status: 'DONE' }, io),
      '--status expects one of PENDING, RUNNING, SUCCESS, FAILED, CANCELLED (or RETRYING); got "DONE"',
    ],
    [['tasks', '--slowest', '0'], (io) => tasksCommand({ slowest: '0' }, io), '--slowest expects a whole number of at least 1; got "0"'],
    [['tasks', '--limit', 'x'], (io) => tasksCommand({ limit: 'x' }, io), '--limit expects a whole number of at least 1; got "x"'],
    [
      ['logs', '--json', 'k'],
      (io) => logsCommand('k', { json: true }, io),
      'logs has no --json; `show --json KEY` gives output tails',
    ],
    [['logs'], (io) => logsCommand(undefined, {}, io), 'give a task KEY, or --batch B for every task of a batch, or --failed for the failed ones'],
    [['logs', '--batch', 'b', '--attempt', '2'], (io) => logsCommand(undefined, { batch: 'b', attempt: '2' }, io), '--attempt goes with a task KEY'],
    [['logs', '--batch', 'b', '--follow'], (io) => logsCommand(undefined, { batch: 'b', follow: true }, io), '--follow goes with a task KEY'],
    [['logs', 'k', '--failed'], (io) => logsCommand('k', { failed: true }, io), '--failed prints every failed task: give it without a KEY'],
    [['logs', 'k', '--attempt', '0'], (io) => logsCommand('k', { attempt: '0' }, io), '--attempt expects a whole number of at least 1; got "0"'],
    [
      ['cancel', '--key', ''],
      (io) => cancelCommand({ key: '' }, io),
      '--key is empty; give a non-empty value (is a shell variable unset?), or leave --key out to mean every task',
    ],
    [
      ['prune', '--batch', 'b', '--older-than', '1d'],
      (io) => pruneCommand({ batch: 'b', olderThan: '1d' }, io),
      '--batch prunes that batch whatever its age: give --batch or --older-than, not both',
    ],
    [['prune', '--older-than', 'soon'], (io) => pruneCommand({ olderThan: 'soon' }, io), '--older-than expects a duration such as 500ms, 5s, 2m or 1h; got "soon"'],
    [['prune', '--older-than', '200y'], (io) => pruneCommand({ olderThan: '200y' }, io), '--older-than expects a duration of at most 100y; got "200y"'],
    [['completion'], (io) => completionCommand(undefined, {}, commands, io), 'completion needs a shell: bash, zsh or fish (splitdance completion bash)'],
    [['completion', 'tcsh'], (io) => completionCommand('tcsh', {}, commands, io), 'completion needs a shell: bash, zsh or fish, not "tcsh" (splitdance completion bash)'],
  ];

  for (const [argv, call, message] of cases) {
    it(`splitdance ${shown(argv)}`, async () => {
      const dir = tempDir();
      const direct = captureIo(dir);
      expect((await usageErrorOf(call(direct.io))).message).toBe(message);
      expect(direct.stdout()).toBe('');
      expect(readdirSync(dir)).toEqual([]);

      expect(await mainIn(dir, argv)).toEqual({ code: 2, stdout: '', stderr: `splitdance: error: ${message}\n` });
      expect(readdirSync(dir)).toEqual([]);
    });
  }
});

describe('run, worker and retry-failed through main(): exit 2 naming the flag, nothing written', () => {
  const SOURCE = 'src';
  // [argv, the message]
  const cases: [string[], string][] = [
    [['run', SOURCE, '--exec', 'true', '--handler', 'h.mjs'], 'give either --exec or --handler, not both'],
    [['run', SOURCE, '--exec', 'true', '--lines', '5', '--chunk-size', '1MiB'], 'give either --lines or --chunk-size, not both'],
    [['run', SOURCE, '--handler', 'h.mjs', '--pipe'], "--pipe goes with --exec (a module handler reads its chunk or item with task.read()); give --exec 'COMMAND' --pipe"],
    [['run', SOURCE, '--exec', 'true', '--include', ''], "--include is empty; give a glob such as '*.log'"],
    [['run', SOURCE, '--exec', 'true', '--exclude', ' '], "--exclude is empty; give a glob such as '*.log'"],
    [['run', SOURCE, '--exec', 'true', '--batch', ' '], '--batch needs a non-empty name'],
    [['run', '--exec', 'true', '--items', ''], '--items needs a list file, or - for stdin (e.g. --items urls.txt)'],
    [['run', '--exec', 'true', '--items', 'l.jsonl', '--key-field', ''], '--key-field is empty; give the name of a field of every record, e.g. --key-field id'],
    [['run', '--exec', 'true', '--items', 'l.txt', '--colsep', '('], '--colsep "(": Invalid regular expression: /(/: Unterminated group'],
    [['run', '--exec', 'true', '--items', 'l.txt', '--colsep', ''], '--colsep is empty; give the pattern that separates the fields of an item, e.g. --colsep ,'],
    [['run', '--exec', 'true', '--items', 'l.txt', '--colsep', ',(?=x)'], '--colsep ",(?=x)": uses lookaround, a backreference or a repeat count over a few hundred, which cannot match in time linear in the text; write it without them'],
    [['run', SOURCE, '--exec', 'true', '-j', 'lots'], `-j/--concurrency expects a number of workers or a share of the ${CPUS} CPUs such as 50%; got "lots"`],
    [['run', SOURCE, '--exec', 'true', '-j', '5000'], '-j/--concurrency allows at most 1024 workers; got "5000"'],
    [['run', SOURCE, '--exec', 'true', '--permanent-codes', '0'], '--permanent-codes expects exit codes 1-255 separated by commas, e.g. 2,64; got "0"'],
    [['run', SOURCE, '--exec', 'true', '--permanent-errors', ''], "--permanent-errors is empty, which would match every failure; give a pattern such as 'Invalid header'"],
    [['run', SOURCE, '--exec', 'true', '--permanent-errors', '['], '--permanent-errors "[": Invalid regular expression: /[/: Unterminated character class'],
    [['run', SOURCE, '--exec', 'true', '--timeout', '10ms'], '--timeout must be at least 100ms (shorter cannot be honoured); got 10ms'],
    [['run', SOURCE, '--exec', 'true', '--timeout', '0s'], '--timeout must be longer than 0'],
    [['run', SOURCE, '--exec', 'true', '--lease', '500ms'], '--lease must be at least 1s (shorter cannot be honoured); got 500ms'],
    [['run', SOURCE, '--exec', 'true', '--progress-interval', '10ms'], '--progress-interval must be at least 100ms (shorter cannot be honoured); got 10ms'],
    [['run', SOURCE, '--exec', 'true', '--heartbeat-timeout', '0s'], '--heartbeat-timeout must be longer than 0'],
    [['run', SOURCE, '--exec', 'true', '--max-runtime', '0s'], '--max-runtime must be longer than 0'],
    [['run', SOURCE, '--exec', 'true', '--load-timeout', '0s'], '--load-timeout must be longer than 0'],
    [['run', SOURCE, '--exec', 'true', '--grace', 'soon'], '--grace expects a duration such as 500ms, 5s, 2m or 1h; got "soon"'],
    [['run', SOURCE, '--exec', 'true', '--retries', 'many'], '--retries expects a whole number from 0 to 1000000; got "many"'],
    [['run', SOURCE, '--exec', 'true', '--jitter', '2'], '--jitter expects a fraction between 0 and 1, e.g. 0.1; got "2"'],
    [['run', SOURCE, '--exec', 'true', '--backoff-factor', '0.5'], '--backoff-factor expects a number from 1 to 100; got "0.5"'],
    [['run', SOURCE, '--exec', 'true', '--chunk-size', 'huge'], '--chunk-size expects a size such as 64MiB, 512KiB or 1048576; got "huge"'],
    [['run', SOURCE, '--exec', 'true', '--max-worker-memory', 'lots'], '--max-worker-memory expects a size such as 64MiB, 512KiB or 1048576; got "lots"'],
    [['run', SOURCE, '--exec', 'true', '--max-failures', 'x'], '--max-failures expects a count or a percentage such as 10%; got "x"'],
    [['run', SOURCE, '--exec', 'true', '--max-failures', '0%'], '--max-failures expects a positive count or a percentage up to 100%; got "0%"'],
    [['run', SOURCE, '--exec', 'true', '--max-tasks-per-worker', '0'], '--max-tasks-per-worker expects a whole number of at least 1; got "0"'],
    [['run', SOURCE, '--exec', 'true', '--history-warn', '0'], '--history-warn expects a whole number of at least 1; got "0"'],
    [
      ['run', SOURCE, '--exec', 'true', '--print', '--json'],
      "--print puts the commands' output on stdout, where --json puts its events: give one of them (`splitdance logs --batch B` prints the output afterwards)",
    ],
    [
      ['run', '--exec', 'true'],
      'no source: give one (`splitdance run ./logs`, `--items list.txt`, `::: a b c`, or `run -` for a list on stdin) or set "source" in splitdance.json',
    ],
    [['worker', '-j', '0'], '-j/--concurrency expects a whole number of at least 1; got "0"'],
    [['worker', '--lease', '10ms'], '--lease must be at least 1s (shorter cannot be honoured); got 10ms'],
    [['worker', '--batch', ''], '--batch needs a non-empty name'],
    [['worker', '--max-worker-memory', 'lots'], '--max-worker-memory expects a size such as 64MiB, 512KiB or 1048576; got "lots"'],
    [
      ['worker', '--tag', '--json'],
      "--print puts the commands' output on stdout, where --json puts its events: give one of them (`splitdance logs --batch B` prints the output afterwards)",
    ],
    [['retry-failed', '--key', ''], '--key is empty; give a non-empty value (is a shell variable unset?), or leave --key out to mean every task'],
    [['retry-failed', '--error', ''], '--error is empty; give a non-empty value (is a shell variable unset?), or leave --error out to mean every task'],
    [['retry-failed', '--cluster', ' '], '--cluster is empty; give a non-empty value (is a shell variable unset?), or leave --cluster out to mean every task'],
    [['retry-failed', '--run', '-j', 'lots'], `-j/--concurrency expects a number of workers or a share of the ${CPUS} CPUs such as 50%; got "lots"`],
    [['retry-failed', '--print'], '--print, --tag, --keep-order, --line-buffer and --results go with --run'],
    [['retry-failed', '--keep-order'], '--print, --tag, --keep-order, --line-buffer and --results go with --run'],
  ];

  for (const [argv, message] of cases) {
    it(`splitdance ${shown(argv)}`, async () => {
      const dir = tempDir();
      expect(await mainIn(dir, argv)).toEqual({ code: 2, stdout: '', stderr: `splitdance: error: ${message}\n` });
      expect(readdirSync(dir)).toEqual([]);
    });
  }
});

describe("commander's own refusals through main(): exit 2 in splitdance's words, nothing written", () => {
  // [argv, what stderr says]
  const cases: [string[], RegExp][] = [
    [['run', 'src', '--halt', 'now'], /^splitdance: error: unknown option '--halt'\n\(GNU parallel's --halt is --max-failures N or P% here/],
    [['status', '--color=sometimes'], /^splitdance: error: option '--color \[when\]' argument 'sometimes' is invalid\. expects always, never or auto/],
    [['show'], /^splitdance: error: missing required argument 'key'/],
    [['stats'], /^splitdance: error: unknown command 'stats'/],
  ];
  for (const [argv, said] of cases) {
    it(`splitdance ${shown(argv)}`, async () => {
      const dir = tempDir();
      const r = await mainIn(dir, argv);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(said);
      expect(readdirSync(dir)).toEqual([]);
    });
  }
});

describe("GNU parallel's input sources and what its users type: exit 2 naming the fix, nothing written", () => {
  // [argv, what stderr says]
  const cases: [string[], RegExp][] = [
    [['run', '--exec', 'echo {}', ':::'], /^splitdance: error: ::: is followed by no values; give ::: a b c, or leave it out/],
    [['run', '--exec', 'echo {}', ':::', 'a', '::::'], /^splitdance: error: :::: is followed by no file; give :::: FILE, or leave it out/],
    [['run', 'src', '--exec', 'echo {}', ':::', 'a'], /^splitdance: error: give the items either as the source src or after :::, not both/],
    [['run', '--items', 'l.txt', '--exec', 'echo {}', ':::', 'a'], /^splitdance: error: give the items either as --items l.txt or after :::, not both/],
    [['run', '--exec', 'echo {}', ':::', 'a', 'b', ':::+', '1'], /^splitdance: error: the :::\+ group 2 is linked to the ::: group 1 value by value, but has 1 values and that one 2/],
    [['run', '--exec', 'echo {}', '::::', 'nowhere.txt'], /^splitdance: error: :::: nowhere.txt: no such file; give a file of items/],
    [['run', '--exec', 'echo {}', '::::', '-0'], /^splitdance: error: :::: -0: no such file; .*\(options go before the first ::: or ::::\)$/m],
    [['run', ':::', 'a', '--exec', 'echo {}'], /^splitdance: error: no handler: .*; --exec came after :::, where every word is an item: put the options before the first :::$/m],
    [['run', '--exec', 'echo {}', '-0', ':::', 'a'], /^splitdance: error: -0 splits a file or stdin into items; the values after ::: are items already/],
    [['run', '-', '-0', '--jsonl', '--exec', 'echo {}'], /^splitdance: error: -0 splits a list into items on NULs; JSON Lines are one record per line/],
    [['run', '-', '-0', '-d', ',', '--exec', 'echo {}'], /^splitdance: error: give either -0 \(--null\) or -d DELIM, not both/],
    [['run', '-', '-d', '', '--exec', 'echo {}'], /^splitdance: error: -d is empty/],
    [['run', 'src', '-0', '--exec', 'echo {}'], /^splitdance: error: --jsonl, --key-field, --colsep, -0 and -d read a list of items/],
    [['run', 'a.log', 'b.log', '--exec', 'echo {}'], /too many arguments for 'run'.*\n\(a glob such as \*\.log gives run many paths; run takes one source: write\nrun \. --include '\*\.log', or run --exec 'CMD \{\}' ::: \*\.log\)\n/],
    // Many items per command: parallel's and xargs' words, checked before anything is written.
    [['run', '-n', '2', '-X', '--exec', 'echo {}', ':::', 'a'], /^splitdance: error: give\seither\s-n\sor\s-X,\snot\sboth:\seach\ssays\show\sthe\sitems\sof\sone\scommand\sare\sgrouped$/m],
    [['run', '-N', '2', '--pipe', '--exec', 'cat', ':::', 'a'], /^splitdance: error: -N\sputs\smany\sitems\sinto\sone\scommand,\sand\s--pipe\sgives\sa\scommand\sone\sitem's\s\(or\sone\schunk's\)\sbytes\son\sits\sstdin:\sleave\sout\s--pipe\sor\s-N$/m],
    [['run', '-m', '--handler', 'h.mjs', ':::', 'a'], /^splitdance: error: -m\sgroups\sthe\sitems\sof\san\s--exec\scommand;\sa\s--handler\smodule\sgroups\sthem\sby\sexporting\sbatch\(tasks,\sctx\),\sand\s--max-items\sN\sbounds\show\smany\sone\scall\sgets:\sleave\s-m\sout$/m],
    [['run', '-X', ':::', 'a'], /^splitdance: error: -X\sputs\smany\sitems\sinto\sone\s--exec\scommand:\sgive\s--exec\swith\sit,\sor\sleave\s-X\sout$/m],
  ];
  for (const [argv, said] of cases) {
    it(`splitdance ${shown(argv)}`, async () => {
      const dir = tempDir();
      const r = await mainIn(dir, argv);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(said);
      for (const line of r.stderr.split('\n').slice(1)) expect(line.length, line).toBeLessThanOrEqual(80);
      expect(readdirSync(dir)).toEqual([]);
    });
  }
});
