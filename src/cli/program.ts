import { Command, InvalidArgumentError, Option } from 'commander';
import { teach } from './help/teach.js';
import { usageError } from './help/usage-errors.js';
import type { Io } from './io.js';
import type { RawArgGroup } from '../job/command-line-items.js';
import { packageVersion } from './version.js';

// No default ([]): help would show `(default: [])`, and an option not given stays absent.
const collect = (value: string, previous: string[] = []) => [...previous, value];

/**
 * commander definitions only; each action hands its options to a plain async command
 * function, imported when its command runs so `status` does not load the runner (or zod).
 */
export function buildProgram(io: Io, setExit: (code: number) => void, groups: RawArgGroup[] = []): Command {
  const program = new Command('splitdance')
    .description('Split a directory or a big file into tasks and run them reliably; rerun to resume after any crash.')
    .version(packageVersion())
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(s),
      outputError: (s, write) => write(usageError(s)),
    })
    .showHelpAfterError('(run with --help for usage)');

  // A command with no JSON to give (logs, watch) still takes --json, to refuse it naming what
  // does give JSON, but does not list it in its --help (nor its completion, nor the man page).
  const common = (cmd: Command, { json = true }: { json?: boolean } = {}) =>
    cmd
      .option('--db <path|url>', 'the store: a SQLite file (default .splitdance/splitdance.db, or $SPLITDANCE_DB) or a postgres:// URL')
      .option('--trust-store-owner <user>', "use a SQLite store that belongs to this user as your own: it chooses what runs (repeatable; see docs/trust-model.md)", collect)
      .addOption(json ? new Option('--json', 'machine-readable output on stdout') : new Option('--json').hideHelp())
      .option('--quiet', 'print nothing on success')
      .option('--verbose', 'more detail, stack traces on errors')
      .option('--color [when]', 'colours: always (also when piped), never or auto (the default: on a terminal, not with TERM=dumb or NO_COLOR)', colorWhen)
      .option('--no-color', 'no colours (as --color=never; also NO_COLOR)');

  poolOptions(common(program.command('run [source]')))
    .usage('[options] [source | ::: VALUES… | :::: FILE…]')
    .description('split <source> into tasks (idempotently) and run the batch to the end')
    .option('--job <file>', 'job file with run options (default: ./splitdance.json when present and no --exec/--handler is given); flags win')
    .option('--dry-run', 'print the plan and the command of the first 20 tasks (all with --verbose); write nothing')
    .option('--sample <n>', 'run a deterministic sample: a fraction (0.1, 10%) or a number of tasks, chosen by key hash')
    .option('--rerun-changed', 're-run succeeded tasks whose file changed (size or mtime) since, and list records (--key-field) that changed')
    .option('--output <template>', "each task's declared output, e.g. 'out/{rel}.gz': the command writes {out}, renamed there on success; up-to-date tasks are not run")
    .option('--batch <name>', "batch name (default: derived from the source path; {date} expands to YYYY-MM-DD)")
    .option('--exec <template>', "shell command per task, e.g. 'gzip -k {}' (placeholders are shell-quoted)")
    .option('--handler <module>', 'a .js, .mjs or .ts module whose default export is async (task, ctx) => result, loaded once per worker')
    .option('--retries <n>', 'retries after the first attempt (default 3)')
    .option('--backoff <duration>', 'delay before the first retry (default 5s)')
    .option('--backoff-factor <n>', 'each further retry waits this many times longer (default 5)')
    .option('--max-backoff <duration>', 'cap on the delay (default 1h)')
    .option('--jitter <fraction>', 'spread delays by ± this share (default 0.1)')
    .option('--timeout <duration>', 'kill an attempt running longer (TIMEOUT, retried)')
    .option('--permanent-codes <codes>', 'exit codes that fail the task without retries, e.g. 2,64')
    .option('--permanent-errors <regex>', 'fail the task without retries when its error or output tail matches (repeatable)', collect)
    .option('--busy-codes <codes>', 'exec exit codes that mean busy, try later: no attempt spent (default 75; none for none)')
    .option('--max-busy <duration>', 'a task answering busy longer than this in a row fails (default 1h)')
    .option('--heartbeat-timeout <duration>', 'kill an attempt silent this long: no ctx.heartbeat(), no exec output (TIMEOUT, retried)')
    .option('--retry-quiet', 'retry quiet failures too: an exec exit 1-128 with nothing on stderr (by default an answer, not retried)')
    .option('--include <glob>', 'only files matching (repeatable)', collect)
    .option('--exclude <glob>', 'skip files matching (repeatable)', collect)
    .option('--chunk-size <size>', 'file source: chunk size, cut after a newline (default 64MiB)')
    .option('--block <size>', 'run - --pipe: cut stdin into blocks of lines this big (default 1MiB, at most 16MiB); a file: as --chunk-size')
    .option('--lines <n>', 'file source (or run - --pipe): N lines per task instead')
    .option('--finished', 'file source: the file is complete, so a last line without a newline is run now (else it waits until the file is 10 minutes still)')
    .option('--items <file>', 'one task per line of this list (- for stdin; also `run -`), keyed by the item: see docs/items.md')
    .option('--jsonl', 'the list is JSON Lines (also by its .jsonl/.ndjson name): one task per record')
    .option('--key-field <name>', "JSON Lines: key each record by this field (default: the record's canonical text)")
    .option('--colsep <regex>', 'split an item into {1}, {2}, … on this regex (default: whitespace)')
    .option('-0, --null', 'a list\'s items end with a NUL, not a newline (find -print0)')
    .option('-d, --delimiter <delim>', "a list's items end with DELIM (\\n, \\t, \\0, \\\\ or any text)")
    .option('-a, --arg-file <file>', 'a file of items, as :::: FILE (repeatable)', collect)
    .option('--pipe', "--exec: the command reads its chunk's bytes, or its item, on stdin; `run - --pipe`: stdin in blocks")
    .option('-n, --max-args <n>', 'at most N items per --exec command, {} is all of them, each quoted (xargs -n)')
    .option('-N, --max-replace-args <n>', 'as -n, and {1}…{N} are the items of the command (GNU parallel -N)')
    .option('-X, --xargs', 'as many items per --exec command as fit, up to --max-items; a word with {} is repeated per item (GNU parallel -X)')
    .option('-m', 'as many items per --exec command as fit, up to --max-items; {} is all of them (GNU parallel -m)')
    .option('--max-items <n>', 'with -X or -m: at most N items per command (default 64); with --handler: per call of its batch export')
    .option('--order <order>', 'which never-tried tasks run first: key (default), size (biggest first), history (slowest last time first), random')
    .option('--shuf', 'as --order random, GNU parallel\'s word: a shuffle fixed per batch')
    .option('--rate <n/period>', 'at most N attempt starts per second, minute or hour for the batch, on every host: 20/s, 300/m')
    .option('--on-complete <command>', 'run this shell command once when the batch reaches its end, on whichever host ends it ({batch}; counts in SPLITDANCE_*)')
    .option('--on-failure <command>', 'run this shell command once when the batch ends with failed or cancelled tasks')
    .option('--rate-key <template>', "apply --rate per rendered key, not to the batch: '{item.host}' (none: the batch's)")
    .option('--adaptive', 'keep as many attempts running as the service takes: halve on busy answers and timeouts, grow back by one (AIMD), 1 to -j')
    .option('--priority <glob=n>', "keys matching GLOB run before the rest, higher N first, e.g. 'urgent/**=10' (repeatable)", collect)
    .option('--max-failures <n>', 'stop claiming after N (or P%) tasks FAILED; exit 1')
    .option('--progress-interval <duration>', 'without a terminal, print progress this often (default 10s)')
    .option('--metrics-file <path>', "write the batch's Prometheus metrics to this file (node_exporter's textfile collector) every progress interval and at exit")
    .option('--history-warn <n>', 'warn when the store holds more attempts than this (default 1000000); see prune')
    .action(async (source: string | undefined, opts, cmd: Command) =>
      setExit(await (await import('./commands/run.js')).runCommand(source, { ...withoutDefaults(opts, cmd), ...(groups.length ? { groups } : {}) }, io)),
    );

  program
    .command('schema')
    .description('print the JSON Schema of splitdance.json (for editor completion)')
    .action(async () => {
      const { jobFileJsonSchema } = await import('../job/job-file-schema.js');
      io.stdout.write(`${JSON.stringify(jobFileJsonSchema(), null, 2)}\n`);
      setExit(0);
    });

  poolOptions(common(program.command('worker')))
    .description("join the store's unfinished batches (no splitting) with their stored handlers and work until none is left")
    .option('--batch <name>', 'only this batch')
    .option('--follow', 'keep polling for new batches and work')
    .action(async (opts, cmd: Command) => setExit(await (await import('./commands/worker.js')).workerCommand(withoutDefaults(opts, cmd), io)));

  common(program.command('status'))
    .description('counts, rate, ETA, failures grouped by error, next retry')
    .option('--batch <name>', 'batch (default: the most recent)')
    .option('--watch', 'follow the batch live (as `watch`)')
    .option('--interval <duration>', 'with --watch: how often to look again (default 1s)')
    // `status --watch` is `watch`: routed here, so that no command imports another.
    .action(async (opts) =>
      setExit(await (opts.watch ? (await import('./commands/watch.js')).watchCommand(opts, io) : (await import('./commands/status.js')).statusCommand(opts, io))),
    );

  program
    .command('metrics')
    .description('the Prometheus text format of every batch (or --batch B): tasks by status, attempts, durations, last update, done')
    .option('--db <path|url>', 'the store: a SQLite file (default .splitdance/splitdance.db, or $SPLITDANCE_DB) or a postgres:// URL')
    .option('--batch <name>', 'only this batch (default: every batch in the store)')
    .action(async (opts) => setExit(await (await import('./commands/metrics.js')).metricsCommand(opts, io)));

  common(program.command('watch'), { json: false })
    .description('follow a batch live until it is done: counts, rate, ETA, running tasks, latest failures')
    .option('--batch <name>', 'batch (default: the most recent; a named one not created yet is waited for)')
    .option('--interval <duration>', 'how often to look again (default 1s)')
    .action(async (opts) => setExit(await (await import('./commands/watch.js')).watchCommand(opts, io)));

  common(program.command('wait'))
    .description("block until the batch is done, whoever runs it; exit with its verdict: 0, 1 with failures, 3 at --timeout")
    .option('--batch <name>', 'batch (default: the most recent; a named one not created yet is waited for)')
    .option('--timeout <duration>', 'give up after this long: exit 3 (default: wait as long as it takes)')
    .option('--interval <duration>', 'how often to look again (default 1s)')
    .action(async (opts) => setExit(await (await import('./commands/wait.js')).waitCommand(opts, io)));

  common(program.command('results'), { json: false })
    .description("every task's key, status, output path, last error and result, in input order, one per line")
    .option('--batch <name>', 'batch (default: the most recent)')
    .option('--status <status>', 'only PENDING, RUNNING, SUCCESS, FAILED or CANCELLED tasks (also: retrying)')
    .option('--jsonl', 'one JSON object per line (the default)')
    .option('--csv', 'CSV with a header line (RFC 4180)')
    .action(async (opts) => setExit(await (await import('./commands/results.js')).resultsCommand(opts, io)));

  common(program.command('tasks'))
    .description('list tasks (tab-separated, or --json)')
    .option('--batch <name>', 'batch (default: the most recent)')
    .option('--status <status>', 'PENDING, RUNNING, SUCCESS, FAILED or CANCELLED (also: retrying)')
    .option('--key <glob>', 'only keys matching')
    .option('--error <text>', 'only tasks whose last error contains this')
    .option('--slowest <n>', 'the N finished tasks whose last attempt took longest')
    .option('--limit <n>', 'at most N tasks (default: all when piped, 50 on a terminal)')
    .action(async (opts) => setExit(await (await import('./commands/tasks.js')).tasksCommand(opts, io)));

  common(program.command('show <key>'))
    .description("a task's attempts timeline, errors and output tail")
    .option('--batch <name>', 'batch (default: the most recent)')
    .action(async (key: string, opts) => setExit(await (await import('./commands/show.js')).showCommand(key, opts, io)));

  common(program.command('why <key>'))
    .description('whether the next run runs the task or skips it, why, and what would run it again')
    .option('--batch <name>', 'batch (default: the most recent)')
    .action(async (key: string, opts) => setExit(await (await import('./commands/why.js')).whyCommand(key, opts, io)));

  common(program.command('logs [key]'), { json: false })
    .description('full captured output of the last attempt (or --attempt N); without a key, of every task (--batch B) or every failed one (--failed)')
    .option('--batch <name>', 'batch (default: the most recent)')
    .option('--attempt <n>', 'attempt number')
    .option('--follow', 'of a running attempt: print its output as it comes until it ends')
    .option('--failed', 'without a key: the last attempt of every FAILED task, each after its key')
    .action(async (key: string | undefined, opts) => setExit(await (await import('./commands/logs.js')).logsCommand(key, opts, io)));

  common(program.command('retry-failed'))
    .description('give FAILED tasks a fresh retry budget (and run them with --run)')
    .option('--batch <name>', 'batch (default: the most recent)')
    .option('--key <glob>', 'only keys matching')
    .option('--error <text>', 'only tasks whose last error contains this')
    .option('--cluster <id>', 'only tasks in this failure cluster (ids are shown by `status`)')
    .option('--run', 'run the batch right away')
    .option('-j, --concurrency <n>', 'with --run: worker processes')
    .option('--print', "with --run: print the stdout (stderr on stderr) of the attempt that ends each task")
    .option('--tag', 'with --print: start each printed line with the task key and a tab')
    .option('-k, --keep-order', 'with --print: print in the order the attempts started')
    .option('--results <dir>', "with --run: each finished task's stdout, stderr and seq as files in DIR/1/KEY/")
    .option('--line-buffer', 'with --run: print the output line by line as it comes (implies --print)')
    .action(async (opts) => setExit(await (await import('./commands/retry-failed.js')).retryFailedCommand(opts, io)));

  common(program.command('prune'))
    .description('delete finished batches idle longer than --older-than (or the one --batch names), with their attempts and logs')
    .option('--older-than <duration>', 'idle for at least this long (default 30d)')
    .option('--batch <name>', 'only this finished batch, whatever its age')
    .option('--dry-run', 'write nothing: list the batches, tasks, attempts and log bytes that would go')
    .action(async (opts) => setExit(await (await import('./commands/prune.js')).pruneCommand(opts, io)));

  common(program.command('report'))
    .description('a self-contained HTML report: timeline per worker, durations, slowest tasks, failures')
    .option('--batch <name>', 'batch (default: the most recent)')
    .option('--html <file>', 'where to write it (default splitdance-report-<batch>.html)')
    .action(async (opts) => setExit(await (await import('./commands/report.js')).reportCommand(opts, io)));

  for (const [name, paused] of [['pause', true], ['resume', false]] as const) {
    common(program.command(name))
      .description(paused ? 'stop claiming from a batch (running attempts finish)' : 'let a paused batch be claimed from again')
      .option('--batch <name>', 'batch (default: the most recent)')
      .action(async (opts) => setExit(await (await import('./commands/pause.js')).setPausedCommand(paused, opts, io)));
  }

  common(program.command('set'))
    .description("change a running batch's claim order, rate, -j or --adaptive: every run and worker on the store follows it within a second")
    .option('--batch <name>', 'batch (default: the most recent)')
    .option('--order <order>', 'key, size (biggest first), history (slowest last time first) or random')
    .option('--shuf', 'as --order random')
    .option('--priority <glob=n>', "keys matching GLOB run before the rest, higher N first (repeatable; replaces the batch's)", collect)
    .option('--no-priority', "drop the batch's priorities")
    .option('--rate <n/period>', 'at most N attempt starts per period on every host (20/s, 300/m, 1000/h), or none')
    .option('-j, --concurrency <n>', 'N attempts running at most on each run and worker of the batch (more workers if above their -j), or none')
    .option('--adaptive', 'each run and worker finds how many attempts to keep running by busy answers (AIMD)')
    .option('--no-adaptive', 'back to each run\'s own -j')
    .action(async (opts) => setExit(await (await import('./commands/set.js')).setCommand(opts, io)));

  common(program.command('cancel'))
    .description('cancel pending tasks (running ones finish, then end CANCELLED unless they succeed)')
    .option('--batch <name>', 'batch (default: the most recent)')
    .option('--key <glob>', 'only keys matching (default: every unfinished task)')
    .option('--all', 'with --key: go on when the glob matches every task of the batch')
    .action(async (opts) => setExit(await (await import('./commands/cancel.js')).cancelCommand(opts, io)));

  common(program.command('batches'))
    .description('list the batches in the store')
    .action(async (opts) => setExit(await (await import('./commands/batches.js')).batchesCommand(opts, io)));

  program
    .command('completion [shell]')
    .description('print the shell completion script for bash, zsh or fish')
    .addOption(new Option('--batches', "print the store's batch names (what the scripts call)").hideHelp())
    .addOption(new Option('--keys <prefix>', "print the batch's task keys that start with this (what the scripts call)").hideHelp())
    .addOption(new Option('--batch <name>').hideHelp())
    .addOption(new Option('--db <path|url>').hideHelp())
    .action(async (shell: string | undefined, opts) => {
      const { commandModel } = await import('./help/command-model.js');
      setExit(await (await import('./commands/completion.js')).completionCommand(shell, opts, commandModel(program), io));
    });

  teach(program);
  return program;
}

function colorWhen(value: string): string {
  if (!['always', 'never', 'auto'].includes(value)) throw new InvalidArgumentError('expects always, never or auto (e.g. --color=always)');
  return value;
}

/** The options of everything that runs a pool of workers on a batch: `run` and `worker`. */
function poolOptions(cmd: Command): Command {
  return cmd
    .option('-j, --concurrency <n>', 'worker processes: a number or a share of the CPUs such as 50% (default: CPUs)')
    .option('--no-wait', 'exit (3) once nothing is claimable now instead of sleeping through retry delays')
    .option('--max-runtime <duration>', 'stop claiming after this long, finish running attempts, exit 3')
    .option('--grace <duration>', 'on SIGINT/SIGTERM, time running attempts get to finish (default 10s)')
    .option('--load-timeout <duration>', 'a worker whose handler module has not loaded after this long is a usage error, exit 2 (default 60s)')
    .option('--max-tasks-per-worker <n>', 'replace a worker after this many tasks')
    .option('--max-worker-memory <size>', 'replace a worker whose RSS grows above this, e.g. 512MiB')
    .option('--lease <duration>', 'lease length; a dead remote coordinator is detected after it (default 30s)')
    .option('--force', 'run tasks whose declared output is up to date anyway')
    .option('--print', "print the stdout (stderr on stderr) of the attempt that ends each task, whole, when it ends")
    .option('--results <dir>', "each finished task's stdout, stderr and seq as files in DIR/1/KEY/ (GNU parallel's layout)")
    .option('--tag', 'with --print: start each printed line with the task key and a tab')
    .option('-k, --keep-order', 'with --print: print in the order the attempts started (task order for a new batch; GNU parallel -k)')
    .option('--line-buffer', 'print the output line by line as it comes, each line whole, of every attempt (implies --print)');
}

/** Options the user actually gave, so a re-run replaces only those in the stored job. */
function withoutDefaults(opts: Record<string, unknown>, cmd: Command): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(opts)) {
    const source = cmd.getOptionValueSource(name);
    if (source === 'cli' || source === 'env' || (Array.isArray(value) && value.length > 0)) out[name] = value;
  }
  return out;
}
