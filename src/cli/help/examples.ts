/**
 * Examples for each command's --help and for the man page: one list, so the two never differ.
 * Each is a command line and what it does; the first ones are what a newcomer needs.
 */
export const EXAMPLES: Record<string, [command: string, what: string][]> = {
  splitdance: [
    ["splitdance run ./logs --exec 'gzip -k {}'", 'one task per file; run it again to resume'],
    ['splitdance status', 'how the latest batch is doing'],
    ['splitdance retry-failed --run', 'try the failed tasks again'],
    ['splitdance help run', "run's options, grouped, and its placeholders"],
  ],
  run: [
    ["splitdance run ./logs --include '*.log' -j 4 --exec 'gzip -k {}'", 'one task per .log file, 4 at a time'],
    ["splitdance run ./in --exec 'convert {} png:{out}' --output 'out/{stem}.png'", 'write each result to {out}; renamed into place on success, up-to-date files skipped'],
    ['splitdance run big.csv --chunk-size 64MiB --handler ./load.mjs', 'a big file in line-aligned chunks, a JavaScript or TypeScript module per worker'],
    ['splitdance run ./logs', 'run again after a crash or Ctrl-C: only unfinished tasks run, with the stored handler'],
  ],
  worker: [
    ['splitdance worker -j 8 --db postgres://user@db/splitdance', "work on a shared store's unfinished batches until none is left"],
    ["splitdance worker --batch nightly --follow", 'wait for the batch, work on it, and keep polling for more'],
  ],
  status: [
    ['splitdance status', 'counts, rate, ETA and failures grouped by error of the latest batch'],
    ['splitdance status --batch nightly --json', 'the same as JSON, for scripts'],
    ['splitdance status --watch', 'follow the batch live'],
  ],
  watch: [
    ['splitdance watch', 'a live view of the latest batch until it is done'],
    ["splitdance watch --batch nightly && echo ok", "wait for a batch another process runs; exit 0 only if every task succeeded"],
  ],
  wait: [
    ['splitdance wait --batch "nightly-$(date +%F)" --timeout 6h && ./publish.sh', 'publish once tonight\'s batch is done, every task SUCCESS'],
    ['splitdance wait --json', 'wait for the latest batch, then print its status as JSON'],
  ],
  results: [
    ['splitdance results > results.jsonl', "every task's status, output and result, in the source's order"],
    ['splitdance results --csv --status FAILED', 'the failed tasks and their errors, as CSV'],
  ],
  why: [
    ['splitdance why 2025/01/app.log', 'will the next run run it, and why (new, retries left, input changed, up to date)'],
    ['splitdance why big.csv:00003 --json', 'the same as JSON: verdict, reason, what would run it again'],
  ],
  tasks: [
    ['splitdance tasks --status FAILED', 'the failed tasks with their last error'],
    ["splitdance tasks --key '2025/*' --error ENOENT", 'tasks by key glob and error text'],
    ['splitdance tasks --slowest 10', 'the ten slowest finished tasks'],
  ],
  show: [
    ['splitdance show 2025/01/app.log', "a task's every attempt: times, worker, exit code, error, output tail"],
    ['splitdance show big.csv:00003 --json', 'one chunk of a file source, as JSON'],
  ],
  logs: [
    ['splitdance logs 2025/01/app.log', "the full output of the task's last attempt"],
    ['splitdance logs 2025/01/app.log --attempt 1', 'the output of its first attempt'],
  ],
  'retry-failed': [
    ['splitdance retry-failed --run', 'give every FAILED task a fresh retry budget and run them now'],
    ["splitdance retry-failed --error 'timed out' --run -j 2", 'only those whose last error contains the text'],
    ['splitdance retry-failed --cluster 3', 'one failure cluster (ids are shown by status); run later'],
  ],
  report: [
    ['splitdance report', 'splitdance-report-<batch>.html for the latest batch'],
    ['splitdance report --batch nightly --html /tmp/nightly.html', 'a named batch, to a chosen file'],
  ],
  pause: [
    ['splitdance pause --batch nightly', 'running coordinators stop claiming, finish their attempts and exit 3'],
    ['splitdance resume --batch nightly', 'let it be claimed again'],
  ],
  resume: [
    ['splitdance resume --batch nightly', 'let a paused batch be claimed again'],
    ['splitdance resume --batch nightly && splitdance run ./in', 'and continue it here'],
  ],
  set: [
    ['splitdance set --order size', 'the latest batch: biggest input first from its next claim on'],
    ["splitdance set --batch nightly --priority 'urgent/**=10'", 'matching keys ahead of the rest (replaces its priorities)'],
    ['splitdance set --no-priority', 'drop the priorities'],
    ['splitdance set --rate 5/s -j 2', 'at most 5 starts a second on every host, and 2 running on each'],
  ],
  cancel: [
    ["splitdance cancel --key 'tmp/*'", 'cancel the matching unfinished tasks'],
    ['splitdance cancel --batch nightly', 'cancel every unfinished task of a batch'],
  ],
  batches: [
    ['splitdance batches', 'every batch with its counts'],
    ['splitdance batches --json', 'the same as JSON'],
  ],
  metrics: [
    ['splitdance metrics', 'every batch in the Prometheus text format'],
    ['splitdance metrics --batch nightly > /var/lib/node_exporter/textfile/sd.prom', "one batch, for node_exporter's textfile collector"],
  ],
  prune: [
    ['splitdance prune', 'delete batches finished and idle for 30 days, with their logs'],
    ['splitdance prune --older-than 7d', 'a shorter age'],
  ],
  schema: [
    ['splitdance schema > splitdance.schema.json', "the job file's JSON Schema, for an editor"],
    ['splitdance schema | jq .properties.retries', 'what one field accepts'],
  ],
  completion: [
    ['source <(splitdance completion bash)', 'complete commands, options and batch names in bash (put it in ~/.bashrc)'],
    ['splitdance completion zsh > "${fpath[1]}/_splitdance"', 'install it for zsh'],
    ['splitdance completion fish > ~/.config/fish/completions/splitdance.fish', 'install it for fish'],
  ],
};

/** The "Examples:" block of a command's --help. */
export function examplesText(name: string): string {
  const list = EXAMPLES[name];
  if (!list?.length) return '';
  return `\nExamples:\n${list.map(([cmd, what]) => `  ${cmd}\n      ${what}`).join('\n')}`;
}
