import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { groupOptions, OTHER } from '../../src/cli/help/option-groups.js';
import { buildProgram } from '../../src/cli/program.js';
import { placeholderAt } from '../../src/template/placeholder.js';
import { ROOT, tempDir } from '../helpers/cli.js';
import { mainIn } from '../helpers/in-process-cli.js';

/**
 * --help teaches (issue 30): every command shows examples, `run --help` groups its options and
 * lists the placeholders of the README's table, repeatable options show no `(default: [])`,
 * and commander's errors speak with splitdance's prefix and useful hints. Called in-process.
 */
const program = buildProgram({} as never, () => undefined);
const commands = program.commands.map((c) => c.name());
const help = async (...args: string[]) => (await mainIn(tempDir(), [...args, '--help'])).stdout;

/** The `{…}` spellings in a text. */
const spellings = (text: string) => [...text.matchAll(/`?(\{[^}\s`]*\})`?/g)].map((m) => m[1]!);

/** The first column of the README's placeholder table. */
function readmePlaceholders(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Placeholders')).split(/\n## /)[0]!;
  const rows = section.split('\n').filter((l) => l.startsWith('| `'));
  expect(rows.length).toBeGreaterThan(8);
  return rows.flatMap((row) => spellings(row.split(' | ')[0]!));
}

describe('--help', () => {
  it('of logs and watch does not list --json, which they refuse naming what gives JSON (SPEC §6: status, tasks, show)', async () => {
    for (const cmd of ['logs', 'watch']) expect(await help(cmd), `${cmd} --help`).not.toContain('--json');
    for (const cmd of ['status', 'tasks', 'show']) expect(await help(cmd), `${cmd} --help`).toContain('--json');
    const logs = await mainIn(tempDir(), ['logs', 'k', '--json']);
    expect([logs.code, logs.stderr]).toEqual([2, 'splitdance: error: logs has no --json; `show --json KEY` gives output tails\n']);
    const watch = await mainIn(tempDir(), ['watch', '--json']);
    expect([watch.code, watch.stderr]).toEqual([2, 'splitdance: error: watch has no --json: `status --json` prints one snapshot\n']);
    for (const line of `${logs.stderr}${watch.stderr}`.split('\n')) expect(line.length).toBeLessThanOrEqual(80);
  });

  it('of every command shows 2 to 4 examples, each a splitdance command line', async () => {
    expect(commands).toEqual(expect.arrayContaining(['run', 'worker', 'status', 'tasks', 'show', 'logs', 'retry-failed', 'completion']));
    const texts = await Promise.all([[], ...commands.map((c) => [c])].map((c) => help(...c)));
    for (const [i, text] of texts.entries()) {
      const block = text.slice(text.indexOf('Examples:'));
      expect(text, `${commands[i - 1] ?? 'splitdance'} --help`).toContain('Examples:');
      const examples = block.split('\n').filter((l) => /^ {2}\S/.test(l));
      expect(examples.length, block).toBeGreaterThanOrEqual(2);
      expect(examples.length, block).toBeLessThanOrEqual(4);
      for (const e of examples) expect(e).toMatch(/splitdance /);
    }
  });

  it('of run lists exactly the placeholders of the README table, each one the engine knows', async () => {
    const text = await help('run');
    // The table's first column: a row starts with a placeholder; the notes below it are prose.
    const table = text.slice(text.indexOf('Placeholders'), text.indexOf('Examples:')).split('\n');
    const listed = table.filter((l) => /^\s+\{/.test(l)).flatMap((l) => spellings(l.trim().split(/\s{2,}/)[0]!));
    expect(new Set(listed)).toEqual(new Set(readmePlaceholders()));
    for (const p of listed) expect(placeholderAt(p, 0)?.text, p).toBe(p);
  });

  it('of run groups its options: source, handler, order and flow, retries and time, output, store; none left over', async () => {
    const text = await help('run');
    const headings = text.split('\n').filter((l) => /^\S.*:$/.test(l)).map((l) => l.replace(/ \(.*\):$/, ':'));
    expect(headings).toEqual(['Source and batch:', 'Handler and workers:', 'Order and flow:', 'Batch hooks:', 'Retries and time:', 'Output:', 'Store:', 'Options:', 'Placeholders:', 'Examples:']);
    const under = (heading: string) => text.slice(text.indexOf(heading)).split('\n\n')[0]!;
    expect(under('Source and batch:')).toMatch(/--include <glob>[\s\S]*--chunk-size/);
    expect(under('Handler and workers:')).toMatch(/--exec <template>[\s\S]*--handler <module>[\s\S]*-j, --concurrency/);
    expect(under('Order and flow:')).toMatch(/--order <order>[\s\S]*--shuf[\s\S]*--priority <glob=n>/);
    expect(under('Batch hooks:')).toMatch(/--on-complete <command>[\s\S]*--on-failure <command>/);
    expect(under('Retries and time:')).toMatch(/--retries <n>[\s\S]*--timeout <duration>/);
    expect(under('Output:')).toMatch(/--output <template>[\s\S]*--json/);
    expect(under('Store:')).toMatch(/--db <path\|url>[\s\S]*postgres:\/\//);
  });

  it('shows no default where there is none: no "(default: [])" anywhere', async () => {
    for (const text of await Promise.all(commands.map((c) => help(c)))) expect(text).not.toContain('(default: [])');
    expect(await help('run')).toMatch(/--handler <module> +a \.js, \.mjs or \.ts module/);
  });

  it('puts an option nobody listed under an explicit fallback heading, after the known groups', () => {
    const cmd = new Command('run').option('--db <x>').option('--shiny-new <x>').option('--exec <x>');
    groupOptions(cmd);
    expect(cmd.options.map((o) => [o.long, o.helpGroupHeading])).toEqual([
      ['--exec', 'Handler and workers:'],
      ['--db', 'Store:'],
      ['--shiny-new', OTHER],
    ]);
  });
});

describe('usage errors', () => {
  const cli = (...args: string[]) => mainIn(tempDir(), args);

  it("carry splitdance's one prefix, commander's as ours, exit 2", async () => {
    for (const args of [['run', '--bogus'], ['sttus'], ['run', '--retries'], ['run', '--max-failures', 'abc', 'src', '--exec', 'true']]) {
      const r = await cli(...args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(/^splitdance: error: /);
    }
  });

  it("name the spelling of another tool's flag instead of a misleading nearest name", async () => {
    const halt = await cli('run', 'src', '--halt', 'now,fail=1');
    expect(halt.stderr).toContain("unknown option '--halt'");
    expect(halt.stderr).toContain('--max-failures');
    expect(halt.stderr).not.toContain('--help?');
    expect((await cli('run', '--joblog', 'x')).stderr).toContain('the store is the job log');
  });

  it('accept --jobs and -P as -j', async () => {
    for (const flag of ['--jobs', '-P', '-j']) {
      const dir = tempDir();
      const r = await mainIn(dir, ['run', join(ROOT, 'fixtures/logs'), '--exec', 'true', flag, '3', '--db', join(dir, 's.db')]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr, flag).toMatch(/, 3 workers, /);
    }
  });
});
