// `run --dry-run` with many items per command: one line per group of consecutive tasks, rendered by renderGroup.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { tempDir } from '../helpers/cli.js';
import { mainIn } from '../helpers/in-process-cli.js';

/**
 * What the groups are and the order of their tasks is this test's subject, not how a template
 * renders for a group (test/template/ holds that): a tiny local render names the mode and each
 * task as KEY#SEQ.
 */
vi.mock('../../src/template/group-command.js', async (importOriginal) => ({
  ...(await importOriginal<object>()),
  renderGroup: (template: string, tasks: { key: string; seq: number }[], mode: string) => ({
    argv: ['/bin/sh', '-c', `${mode}[${template}] ${tasks.map((t) => `${t.key}#${t.seq}`).join(' ')}`],
    fallback: null,
  }),
}));

const items = (n: number) => Array.from({ length: n }, (_, i) => `i${String(i + 1).padStart(2, '0')}`);

describe('run --dry-run with a group', () => {
  it('-n 2: the plan says so, and each command is two consecutive tasks, the last one smaller', async () => {
    const dir = tempDir();
    const r = await mainIn(dir, ['run', '--dry-run', '--exec', 'echo {}', '-n', '2', ':::', 'a', 'b', 'c', 'd', 'e']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^handler {2}--exec "echo \{\}" -n 2 on \d+ worker\(s\), 3 retries, up to 2 items per command$/m);
    expect(r.stdout).toMatch(/^commands:\nn\[echo \{\}\] a#1 b#2\nn\[echo \{\}\] c#3 d#4\nn\[echo \{\}\] e#5\n$/m);
  });

  it('-X --max-items 2 --json: the stored handler, and each command with the keys of its tasks', async () => {
    const dir = tempDir();
    const r = await mainIn(dir, ['run', '--dry-run', '--json', '--exec', 'echo {}', '-X', '--max-items', '2', ':::', 'a', 'b', 'c']);
    expect(r.code, r.stderr).toBe(0);
    const plan = JSON.parse(r.stdout);
    expect(plan.handler).toEqual({ kind: 'exec', template: 'echo {}', group: { mode: 'X', max: 2 } });
    expect(plan.commands).toEqual([
      { key: 'a', keys: ['a', 'b'], command: 'X[echo {}] a#1 b#2' },
      { key: 'c', keys: ['c'], command: 'X[echo {}] c#3' },
    ]);
    expect(plan.moreCommands).toBe(false);
  });

  it('the first 20 commands are the first 20 groups (--verbose: every one)', async () => {
    const dir = tempDir();
    const argv = ['run', '--dry-run', '--exec', 'echo {}', '-m', '--max-items', '3', ':::', ...items(65)];
    const r = await mainIn(dir, argv);
    expect(r.code, r.stderr).toBe(0);
    const commands = r.stdout.slice(r.stdout.indexOf('commands (the first 20; --verbose prints every one):\n')).split('\n').slice(1, -1);
    expect(commands).toHaveLength(20);
    expect(commands[19]).toBe('m[echo {}] i58#58 i59#59 i60#60');
    const all = await mainIn(dir, [...argv.slice(0, 2), '--verbose', ...argv.slice(2)]);
    expect(all.stdout.slice(all.stdout.indexOf('commands:\n')).split('\n').slice(1, -1)).toHaveLength(22);
  });

  it('with stages: each stage\'s groups are of its own tasks; a stage without a group has one command a task', async () => {
    const dir = tempDir();
    const stages = [
      { name: 'a', exec: 'echo {}', maxReplaceArgs: 2 },
      { name: 'b', needs: ['a'], exec: 'echo b {}' },
    ];
    writeFileSync(join(dir, 'splitdance.json'), JSON.stringify({ stages }));
    const r = await mainIn(dir, ['run', '--dry-run', '--json', ':::', 'x', 'y', 'z']);
    expect(r.code, r.stderr).toBe(0);
    const { commands } = JSON.parse(r.stdout) as { commands: { key: string; keys?: string[]; command: string }[] };
    const grouped = commands.filter((c) => c.keys);
    expect(grouped.map((c) => c.keys)).toEqual([
      ['a/x', 'a/y'],
      ['a/z'],
    ]);
    expect(grouped[0]!.command).toMatch(/^N\[echo \{\}\] a\/x#\d+ a\/y#\d+$/);
    expect(commands.filter((c) => !c.keys).map((c) => c.key)).toEqual(['b/x', 'b/y', 'b/z']);
  });

  it('the plan names a module\'s --max-items', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'h.mjs'), 'export default async () => null;\n');
    const r = await mainIn(dir, ['run', '--dry-run', '--handler', 'h.mjs', '--max-items', '8', ':::', 'a']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^handler {2}--handler \S+h\.mjs --max-items 8 on .*, up to 8 items per batch call$/m);
  });
});
