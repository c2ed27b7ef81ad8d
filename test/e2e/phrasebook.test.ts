import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, ROOT, tempDir } from '../helpers/cli.js';
import { writeFiles } from '../helpers/project.js';
import { missing } from '../helpers/services.js';

/**
 * The README's phrasebook ("Coming from GNU parallel, xargs, pueue or rush"), run. Every row's
 * splitdance spelling runs as written, through a shell, in a folder of files; where GNU parallel
 * has the word, parallel's own command runs beside it on the same input and the outputs are
 * compared. A row without a scenario here, or a scenario whose row is gone, fails the first test.
 */

interface Row {
  /** The first code span of the "you type" cell: the row's name here. */
  name: string;
  /** Every code span of the "with splitdance" cell, as written (`\|` read as `|`). */
  ours: string[];
}

function phrasebook(): Row[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.split(/^## Coming from GNU parallel.*$/m)[1]!.split(/^## /m)[0]!;
  const spans = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!.replaceAll('\\|', '|'));
  return section
    .split('\n')
    .filter((line) => line.startsWith('| ') && !/^\| (you type|---)/.test(line))
    .map((line) => {
      const cells = line.replaceAll('\\|', '\u0000').split('|').map((c) => c.replaceAll('\u0000', '\\|'));
      return { name: spans(cells[1]!)[0]!, ours: spans(cells[2]!) };
    });
}

/** A working folder with `splitdance` on PATH, as a reader who installed it has. */
function folder(files: Record<string, string> = {}): { cwd: string; sh: (cmd: string, input?: string) => Ran } {
  const cwd = tempDir('sd-phrase-');
  const bin = join(cwd, '.bin');
  mkdirSync(bin);
  writeFileSync(join(bin, 'splitdance'), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`);
  chmodSync(join(bin, 'splitdance'), 0o755);
  writeFiles(cwd, files);
  const env = { ...process.env, NO_COLOR: '1', PATH: `${bin}:${process.env.PATH}` };
  const sh = (cmd: string, input?: string): Ran => {
    const r = spawnSync('/bin/bash', ['-c', cmd], { cwd, env, input, encoding: 'utf8', timeout: 120_000 });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  };
  return { cwd, sh };
}

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

const PARALLEL = !missing('parallel', 'the phrasebook rows compared with GNU parallel');
const sorted = (text: string) => text.split('\n').filter(Boolean).sort();

const LOGS = { 'a.log': 'x\nERROR one\n', 'b.log': 'y\n', 'c d.log': 'ERROR 1\nERROR 2\n' };
/** The files of a folder (not the store, not `splitdance` on PATH), sorted. */
const listing = (cwd: string) => spawnSync('sh', ['-c', "find . -path ./.splitdance -prune -o -path ./.bin -prune -o -type f -print | LC_ALL=C sort"], { cwd, encoding: 'utf8' }).stdout;
const ok = (r: Ran) => expect(r.code, r.stderr).toBe(0);
/** A task's JSON rows, through the CLI. */
const tasksOf = (sh: (cmd: string) => Ran) => JSON.parse(sh('splitdance tasks --json').stdout) as { key: string; status: string; attempts: number }[];

/** Each row: what it runs and what it must show. `row.ours` are the row's spans as written. */
const SCENARIOS: Record<string, (row: Row) => void> = {
  'parallel -j4 gzip ::: *.log': (row) => {
    const ours = folder(LOGS);
    ok(ours.sh(row.ours[0]!));
    const theirs = folder(LOGS);
    if (PARALLEL) expect(listing(ours.cwd)).toBe((theirs.sh('parallel --will-cite -j4 gzip ::: *.log'), listing(theirs.cwd)));
    expect(listing(ours.cwd)).toBe('./a.log.gz\n./b.log.gz\n./c d.log.gz\n');
    const incremental = folder(LOGS);
    ok(incremental.sh(row.ours[1]!)); // the folder: a second run with a new file runs that file alone
    writeFileSync(join(incremental.cwd, 'e.log'), 'e\n');
    ok(incremental.sh(row.ours[1]!));
    expect(listing(incremental.cwd)).toBe('./a.log.gz\n./b.log.gz\n./c d.log.gz\n./e.log.gz\n');
  },
  'parallel echo {1} {2} ::: a b ::: 1 2': (row) => {
    const { sh } = folder();
    const r = sh(row.ours[0]!);
    ok(r);
    expect(r.stdout).toBe('a 1\na 2\nb 1\nb 2\n');
    if (PARALLEL) expect(r.stdout).toBe(sh('parallel --will-cite -k echo {1} {2} ::: a b ::: 1 2').stdout);
  },
  "parallel 'gzip -c {} > {.}.gz' ::: *.log": (row) => {
    const ours = folder(LOGS);
    ok(ours.sh(row.ours[0]!));
    const theirs = folder(LOGS);
    if (PARALLEL) expect(listing(ours.cwd)).toBe((theirs.sh(`parallel --will-cite ${row.name.slice('parallel '.length)}`), listing(theirs.cwd)));
    expect(listing(ours.cwd)).toBe('./a.gz\n./a.log\n./b.gz\n./b.log\n./c d.gz\n./c d.log\n');
    expect(ours.sh("gunzip -c 'c d.gz'").stdout).toBe(LOGS['c d.log']);
  },
  "find . -name '*.log' | parallel 'gzip -c {} > {.}.gz'": (row) => {
    const tree = { 'tree/sub/one.log': 'one\n', 'tree/two.log': 'two\n', 'top.log': 'top\n' };
    const ours = folder(tree);
    ok(ours.sh(row.ours[0]!));
    expect(listing(ours.cwd)).toBe('./top.gz\n./top.log\n./tree/sub/one.gz\n./tree/sub/one.log\n./tree/two.gz\n./tree/two.log\n');
    if (PARALLEL) {
      const theirs = folder(tree);
      theirs.sh(row.name.replace('parallel', 'parallel --will-cite'));
      expect(listing(ours.cwd)).toBe(listing(theirs.cwd));
    }
  },
  'find . -print0 | parallel -0 gunzip -t': (row) => {
    const ours = folder();
    ours.sh("printf 'a\\n' | gzip > 'new\nline.gz' && printf 'b\\n' | gzip > 'sp ace.gz'");
    const r = ours.sh(row.ours[0]!);
    ok(r);
    expect(tasksOf(ours.sh).map((t) => t.key).sort()).toEqual(['./new\nline.gz', './sp ace.gz']);
    // parallel on the same names (the row's find, narrowed to them as ours is)
    if (PARALLEL) expect(ours.sh("find . -name '*.gz' -print0 | parallel --will-cite -0 gunzip -t").code).toBe(0);
  },
  "parallel -j2 'render --slot {%} {}' ::: *.scene": (row) => {
    // render: holds its slot's lock for a moment; two commands in one slot at once fail loudly.
    const render = `#!/bin/sh\nexec 9>"slot-$2.lock"; flock -n 9 || { echo "slot $2 taken" >&2; exit 1; }\necho "$2 $3" >> slots.txt; sleep 0.2\n`;
    const scenes = Object.fromEntries(['a', 'b', 'c', 'd', 'e', 'f'].map((n) => [`${n}.scene`, n]));
    for (const cmd of PARALLEL ? [row.ours[0]!, `parallel --will-cite ${row.name.slice('parallel '.length)}`] : [row.ours[0]!]) {
      const { cwd, sh } = folder({ ...scenes, '.bin/render': render });
      chmodSync(join(cwd, '.bin/render'), 0o755);
      ok(sh(cmd));
      const slots = readFileSync(join(cwd, 'slots.txt'), 'utf8').trim().split('\n');
      expect(slots.map((l) => l.split(' ')[1]).sort()).toEqual(Object.keys(scenes));
      expect(new Set(slots.map((l) => l.split(' ')[0]))).toEqual(new Set(['1', '2']));
    }
  },
  'parallel --retries 3': (row) => {
    const { sh } = folder();
    // Fails twice, saying why, then succeeds: three attempts of the four --retries 3 allows.
    const r = sh(`splitdance run ${row.ours[0]} --backoff 10ms --exec 'n=$(cat n.{} 2>/dev/null || echo 0); echo $((n+1)) > n.{}; [ $n -ge 2 ] || { echo busy >&2; exit 1; }' ::: a`);
    ok(r);
    expect(tasksOf(sh)).toMatchObject([{ key: 'a', status: 'SUCCESS', attempts: 3 }]);
  },
  'parallel --timeout 60': (row) => {
    const { sh } = folder();
    expect(row.ours[0]).toBe('--timeout 60s');
    ok(sh(`splitdance run ${row.ours[0]} ${row.ours[1]} --exec 'true {}' ::: a`));
    const bare = sh("splitdance run --timeout 60 --exec 'true {}' ::: b");
    expect(bare.code).toBe(2);
    expect(bare.stderr).toMatch(/--timeout/);
    const slow = sh("splitdance run --timeout 1s --retries 0 --exec 'sleep 30; true {}' ::: c");
    expect(slow.code).toBe(1);
    expect(slow.stderr).toMatch(/timed out|TIMEOUT/i);
  },
  'parallel --joblog jobs.log --resume': () => {
    const { cwd, sh } = folder();
    const cmd = "splitdance run --exec 'echo {} >> ran.txt' ::: a b";
    ok(sh(cmd));
    const again = sh(cmd);
    ok(again);
    expect(again.stderr).toMatch(/nothing ran/);
    expect(readFileSync(join(cwd, 'ran.txt'), 'utf8').split('\n').filter(Boolean).sort()).toEqual(['a', 'b']);
  },
  'parallel --resume-failed': (row) => {
    const { sh } = folder();
    expect(sh("splitdance run --retries 0 --exec 'test -e fixed || { echo not yet >&2; exit 1; }; echo {} >> done.txt' ::: a").code).toBe(1);
    sh('touch fixed');
    ok(sh(row.ours[0]!));
    expect(tasksOf(sh)).toMatchObject([{ key: 'a', status: 'SUCCESS' }]);
  },
  'parallel --halt soon,fail=5%': (row) => {
    const { sh } = folder();
    const items = Array.from({ length: 40 }, (_, i) => `i${i}`).join(' ');
    // 50 ms an attempt, far above the few ms of work a slot queues (pool/slot-window.ts): the slot
    // holds its running attempt and one more, so after the second failure at most those two run.
    const r = sh(`splitdance run ${row.ours[0]} -j 1 --retries 0 --exec 'sleep 0.05; echo no >&2; exit 1' ::: ${items}`);
    expect(r.code).toBe(1);
    const left = tasksOf(sh).filter((t) => t.status === 'PENDING').length;
    expect(left).toBeGreaterThan(30); // 5% of 40 is 2: it stopped claiming long before the end
  },
  'parallel --bar': (row) => {
    const { sh } = folder();
    ok(sh("splitdance run --exec 'echo out-{}' ::: a"));
    expect(row.ours.slice(0, 3)).toEqual(['splitdance status', 'splitdance watch', 'splitdance logs --follow KEY']);
    ok(sh(row.ours[0]!));
    ok(sh(row.ours[1]!));
    expect(sh(row.ours[2]!.replace('KEY', 'a')).stdout).toBe('out-a\n');
  },
  'parallel --tag -k grep -c ERROR ::: *.log': (row) => {
    const { sh } = folder(LOGS);
    const r = sh(row.ours[0]!);
    expect(r.code).toBe(1); // b.log has no ERROR: grep exits 1, as parallel counts it
    expect(r.stdout).toBe('a.log\t1\nb.log\t0\nc d.log\t2\n');
    expect(tasksOf(sh).map((t) => t.attempts)).toEqual([1, 1, 1]); // no retry of an answer
    if (PARALLEL) {
      const theirs = sh(row.name.replace('parallel', 'parallel --will-cite'));
      expect(r.stdout).toBe(theirs.stdout);
      expect(theirs.code).toBe(1);
    }
  },
  "parallel --line-buffer --tag 'tail -n 2 {}' ::: *.log": (row) => {
    const { sh } = folder(LOGS);
    const r = sh(row.ours[0]!);
    ok(r);
    expect(sorted(r.stdout)).toEqual(['a.log\tERROR one', 'a.log\tx', 'b.log\ty', 'c d.log\tERROR 1', 'c d.log\tERROR 2']);
    if (PARALLEL) expect(sorted(r.stdout)).toEqual(sorted(sh(row.name.replace('parallel', 'parallel --will-cite')).stdout));
  },
  'parallel --results out wc -l ::: *.log': (row) => {
    const ours = folder(LOGS);
    ok(ours.sh(row.ours[0]!));
    const tree = (cwd: string) => spawnSync('sh', ['-c', 'cd out && find . -type f | LC_ALL=C sort | while read -r f; do echo "$f: $(cat "$f")"; done'], { cwd, encoding: 'utf8' }).stdout;
    expect(tree(ours.cwd)).toContain('./1/c d.log/stdout: 2 c d.log');
    if (PARALLEL) {
      const theirs = folder(LOGS);
      theirs.sh(row.name.replace('parallel', 'parallel --will-cite -j1'));
      expect(tree(ours.cwd).replace(/seq: \d/g, 'seq')).toBe(tree(theirs.cwd).replace(/seq: \d/g, 'seq'));
    }
  },
  'parallel --dry-run gzip ::: *.log': (row) => {
    const ours = folder(LOGS);
    const r = ours.sh(row.ours[0]!);
    ok(r);
    for (const name of Object.keys(LOGS)) expect(r.stdout + r.stderr).toContain(`gzip '${name}'`);
    expect(listing(ours.cwd)).toBe('./a.log\n./b.log\n./c d.log\n'); // nothing ran
    expect(existsSync(join(ours.cwd, '.splitdance'))).toBe(false); // nothing written
    if (PARALLEL) expect(ours.sh(row.name.replace('parallel', 'parallel --will-cite')).stdout).toMatch(/^gzip a\.log$/m);
  },
  'pueue pause': (row) => {
    const { sh } = folder();
    expect(sh("splitdance run --backoff 1h --no-wait --exec 'echo later >&2; exit 1' ::: a b").code).toBe(3);
    expect(row.ours.slice(0, 3)).toEqual(['splitdance pause', 'resume', 'cancel']);
    ok(sh(row.ours[0]!));
    ok(sh('splitdance resume'));
    ok(sh('splitdance cancel --all'));
    expect(tasksOf(sh).map((t) => t.status)).toEqual(['CANCELLED', 'CANCELLED']);
  },
  'parallel -a list.txt cmd {}': (row) => {
    const cmd = '#!/bin/sh\necho "$@" >> cmd.txt\n';
    const spellings = [row.ours[0]!, row.ours[1]!, `splitdance run --exec 'cmd {}' ${row.ours[2]}`, `splitdance run --exec 'cmd {}' ${row.ours[3]}`];
    expect(spellings[1]).toMatch(/^cat list \| splitdance run - /);
    for (const spelling of spellings) {
      const { cwd, sh } = folder({ 'list.txt': 'one\ntwo words\n', list: 'one\ntwo words\n', '.bin/cmd': cmd });
      chmodSync(join(cwd, '.bin/cmd'), 0o755);
      ok(sh(spelling));
      for (const f of ['list.txt', 'list']) writeFileSync(join(cwd, f), 'one\nthree\ntwo words\n');
      ok(sh(spelling)); // the edited list: its new line alone runs
      expect(readFileSync(join(cwd, 'cmd.txt'), 'utf8').split('\n').filter(Boolean).sort(), spelling).toEqual(['one', 'three', 'two words']);
      if (PARALLEL) expect(sorted(sh(row.name.replace('parallel', 'parallel --will-cite')).stdout)).toEqual([]);
    }
  },
  'parallel --pipepart -a big.log --block 64M wc -l': (row) => {
    const { sh } = folder({ 'big.log': 'line\n'.repeat(1000) });
    ok(sh(row.ours[0]!));
    expect(tasksOf(sh)).toMatchObject([{ key: 'big.log:00000', status: 'SUCCESS' }]);
    expect(sh('splitdance logs big.log:00000').stdout.trim()).toBe('1000');
  },
  'cat big.log | parallel --pipe --block 1M wc -l': (row) => {
    const { sh } = folder();
    sh('seq 1 400000 > big.log');
    const r = sh(row.ours[0]!);
    ok(r);
    const sum = (text: string) => text.trim().split('\n').reduce((n, l) => n + Number(l), 0);
    expect(sum(r.stdout)).toBe(400000);
    expect(r.stdout.trim().split('\n').length).toBeGreaterThan(1); // 2.7 MB in 1 MiB blocks
    if (PARALLEL) expect(sum(sh(row.name.replace('parallel', 'parallel --will-cite')).stdout)).toBe(400000);
    const again = sh(row.ours[0]!); // the same stream again: every block is done
    ok(again);
    expect(again.stdout).toBe('');
  },
  'xargs -P2 -n 64 gzip < list': (row) => {
    // 100 files: gzip gets them 64 and 36 at a time, as xargs gives them, and each is its own task.
    const files = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`f${String(i).padStart(3, '0')}.txt`, `file ${i}\n`]));
    const list = Object.keys(files).join('\n') + '\n';
    const ours = folder({ ...files, list });
    ok(ours.sh(row.ours[0]!));
    const tasks = tasksOf(ours.sh);
    expect(tasks).toHaveLength(100);
    expect(tasks.every((t) => t.status === 'SUCCESS' && t.attempts === 1)).toBe(true);
    const theirs = folder({ ...files, list });
    ok(theirs.sh(row.name));
    expect(listing(ours.cwd)).toBe(listing(theirs.cwd));
    expect(listing(ours.cwd)).toContain('./f099.txt.gz\n');
    // -X: one command gets as many items as fit; a stand-in optipng logs what it got, beside parallel's.
    const pngs = { 'a.png': '', 'b c.png': '', 'd.png': '', '.bin/optipng': '#!/bin/sh\nfor a in "$@"; do echo "$a"; done >> got.txt\n' };
    const x = folder(pngs);
    chmodSync(join(x.cwd, '.bin/optipng'), 0o755);
    ok(x.sh(row.ours[1]!));
    // Each file once, whole; how many commands share them depends on the free places (dealt round them).
    expect(sorted(readFileSync(join(x.cwd, 'got.txt'), 'utf8'))).toEqual(['a.png', 'b c.png', 'd.png']);
    if (PARALLEL) {
      const y = folder(pngs);
      chmodSync(join(y.cwd, '.bin/optipng'), 0o755);
      ok(y.sh('parallel --will-cite -X optipng ::: *.png')); // the row's second spelling
      expect(sorted(readFileSync(join(x.cwd, 'got.txt'), 'utf8'))).toEqual(sorted(readFileSync(join(y.cwd, 'got.txt'), 'utf8')));
    }
  },
  'parallel --shuf echo ::: 1 2 3': (row) => {
    // Every item once, as parallel --shuf prints them; on 40 items, not in the order given.
    const { sh } = folder();
    const items = Array.from({ length: 40 }, (_, i) => String(i + 1));
    const ours = sh(row.ours[0]!.replace('1 2 3', items.join(' ')).replace('run ', 'run -j 1 '));
    ok(ours);
    expect(sorted(ours.stdout)).toEqual(sorted(items.join('\n')));
    expect(ours.stdout.trim().split('\n')).not.toEqual(items);
    if (PARALLEL) expect(sorted(ours.stdout)).toEqual(sorted(sh(`parallel --will-cite --shuf echo ::: ${items.join(' ')}`).stdout));
    // --order size: the biggest file is gzipped first (-j 1: one at a time), as ls -S | parallel -j1 does.
    const files = { 'a.txt': 'a'.repeat(10), 'b.txt': 'b'.repeat(3000), 'c.txt': 'c'.repeat(200) };
    const gz = '#!/bin/sh\nbasename "$1" >> order.txt\nexec gzip "$@"\n';
    const sized = folder({ ...files, '.bin/gzip-logged': gz });
    chmodSync(join(sized.cwd, '.bin/gzip-logged'), 0o755);
    const bySize = row.ours.find((o) => o.includes('--order size'))!;
    ok(sized.sh(bySize.replace("'gzip {}'", "'gzip-logged {}'").replace('run .', "run . --include '*.txt' -j 1")));
    expect(readFileSync(join(sized.cwd, 'order.txt'), 'utf8')).toBe('b.txt\nc.txt\na.txt\n');
    if (PARALLEL) {
      const theirs = folder({ ...files, '.bin/gzip-logged': gz });
      chmodSync(join(theirs.cwd, '.bin/gzip-logged'), 0o755);
      ok(theirs.sh('ls -S *.txt | parallel --will-cite -j1 gzip-logged'));
      expect(readFileSync(join(theirs.cwd, 'order.txt'), 'utf8')).toBe(readFileSync(join(sized.cwd, 'order.txt'), 'utf8'));
    }
  },
  'parallel -S host1,host2': (row) => {
    const { sh } = folder();
    expect(row.ours).toContain('splitdance worker');
    ok(sh('splitdance worker --help'));
  },
};

describe("the README's phrasebook", () => {
  const rows = phrasebook();

  it('has a scenario for every row, and a row for every scenario', () => {
    expect(rows.length).toBeGreaterThan(10);
    expect(rows.map((r) => r.name).filter((n) => !SCENARIOS[n])).toEqual([]);
    expect(Object.keys(SCENARIOS).filter((n) => !rows.some((r) => r.name === n))).toEqual([]);
  });

  for (const row of rows) {
    const scenario = SCENARIOS[row.name];
    if (scenario) it(`runs the row for ${row.name}`, () => scenario(row), 180_000);
  }
});

