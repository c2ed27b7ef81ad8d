import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, tempDir } from '../helpers/cli.js';
import { statusJson } from '../helpers/json-views.js';
import { dbPathIn, query, storedTasks } from '../helpers/store.js';

/** Items as a source (SPEC §3), through the built CLI: keyed by content, stored with their tasks. */

const items30 = () => Array.from({ length: 30 }, (_, i) => `item-${String(i + 1).padStart(3, '0')}`);

/** The values the commands received, one file per attempt ({#} is unique per task). */
function received(out: string): Buffer[] {
  return readdirSync(out).map((f) => readFileSync(join(out, f)));
}

function texts(out: string): string[] {
  return received(out).map((b) => b.toString('utf8')).sort();
}

/** Inserted at the top, one removed, two swapped. */
function edited(list: string[]): string[] {
  const next = list.filter((x) => x !== 'item-010');
  const [a, b] = [next.indexOf('item-003'), next.indexOf('item-020')];
  [next[a], next[b]] = [next[b]!, next[a]!];
  return ['NEW-TOP', ...next];
}

describe('items: one task per line, keyed by the item', () => {
  it('an edited list (a line inserted at the top, one removed, two swapped) runs exactly the new item', async () => {
    const dir = tempDir();
    const out = join(dir, 'out');
    mkdirSync(out);
    writeFileSync(join(dir, 'list.txt'), items30().join('\n') + '\n');
    const exec = ['--exec', 'printf %s {} > "$OUT"/{#}', '-j', '2'];
    const first = await runCli(['run', '--items', 'list.txt', ...exec], { cwd: dir, env: { OUT: out } });
    expect(first.code, first.stderr).toBe(0);
    expect(texts(out)).toEqual(items30());
    writeFileSync(join(dir, 'list.txt'), edited(items30()).join('\n') + '\n');
    const again = await runCli(['run', '--items', 'list.txt', ...exec], { cwd: dir, env: { OUT: out } });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/31 tasks \(1 new\)/);
    expect(texts(out)).toEqual([...items30(), 'NEW-TOP'].sort());
    const keys = (await storedTasks(dbPathIn(dir))).map((t) => t.key).sort();
    expect(keys).toEqual([...items30(), 'NEW-TOP'].sort());
  });

  it('the same from stdin: `… | run -` resumes its default batch in the same folder and runs only the new item', async () => {
    const dir = tempDir();
    const out = join(dir, 'out');
    mkdirSync(out);
    const exec = ['--exec', 'printf %s {} > "$OUT"/{#}'];
    const first = await runCli(['run', '-', ...exec], { cwd: dir, env: { OUT: out }, input: items30().join('\n') + '\n' });
    expect(first.code, first.stderr).toBe(0);
    const batch = /batch (stdin-[0-9a-f]{8}):/.exec(first.stderr)?.[1];
    expect(batch, first.stderr).toBeDefined();
    const again = await runCli(['run', '-', ...exec], { cwd: dir, env: { OUT: out }, input: edited(items30()).join('\n') });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain(`batch ${batch}: 31 tasks (1 new)`);
    expect(texts(out)).toEqual([...items30(), 'NEW-TOP'].sort());
  });

  it('hostile items run exactly once each with the exact value; CRLF, empty lines and a repeat do not make tasks', async () => {
    const dir = tempDir();
    const out = join(dir, 'out');
    mkdirSync(out);
    const hostile = [`a'b "c" $(touch pwned) \`touch pwned2\`; | & >x`, '-n', '--help', '  spaced  ', 'x'.repeat(10 * 1024), 'tab\there', 'ünï 🙂'];
    const bad = Buffer.from([0x7a, 0xff, 0xfe, 0x41]);
    const list = Buffer.concat([
      Buffer.from(hostile.join('\r\n') + '\r\n\n\n'),
      bad,
      Buffer.from(`\n${hostile[1]}\n`), // a repeat: one task
    ]);
    writeFileSync(join(dir, 'list.txt'), list);
    // Arguments are text: the valid items through {}, the bytes of the one that is not UTF-8 through --pipe.
    const r = await runCli(['run', '--items', 'list.txt', '--exec', 'printf %s {} > "$OUT"/{#}'], { cwd: dir, env: { OUT: out } });
    expect(r.code).toBe(1); // the invalid UTF-8 item cannot be an argument: it fails, saying to use --pipe
    expect(r.stderr).toMatch(/not valid UTF-8.*--pipe/);
    expect(r.stderr).toMatch(/1 item of the list repeated/);
    expect(texts(out)).toEqual([...hostile].sort());
    expect(readdirSync(dir)).not.toContain('pwned');
    expect(readdirSync(dir)).not.toContain('pwned2');
    const keys = (await storedTasks(dbPathIn(dir))).map((t) => t.key);
    expect(keys).toHaveLength(hostile.length + 1);
    // The 10 KB line's key is shortened, still unique; the others are the items themselves.
    expect(keys).toEqual(expect.arrayContaining(hostile.filter((h) => h.length < 200)));
    expect(keys.find((k) => k.startsWith('xxx'))).toMatch(/^x{160}…[0-9a-f]{16}$/);
    // --dry-run shows the first items, control characters escaped.
    writeFileSync(join(dir, 'esc.txt'), 'a\x1b[31mred\nb\n');
    const dry = await runCli(['run', '--items', 'esc.txt', '--exec', 'echo {}', '--dry-run'], { cwd: dir });
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain('tasks    2; first items: a\\x1b[31mred, b');

    const piped = join(dir, 'piped');
    mkdirSync(piped);
    const p = await runCli(['run', '--items', 'list.txt', '--batch', 'piped', '--pipe', '--exec', 'cat > "$OUT"/{#}'], { cwd: dir, env: { OUT: piped } });
    expect(p.code, p.stderr).toBe(0);
    const got = received(piped).map((b) => b.toString('base64')).sort();
    const want = [...hostile.map((h) => Buffer.from(h + '\n')), Buffer.concat([bad, Buffer.from('\n')])].map((b) => b.toString('base64')).sort();
    expect(got).toEqual(want);
  });

  it('JSON Lines with --key-field: the key is the field, {item.FIELD} its value, a newline inside a string stays in the value', async () => {
    const dir = tempDir();
    const out = join(dir, 'out');
    mkdirSync(out);
    const records = [
      { id: 'u1', name: 'line one\nline two' },
      { id: 'u2', name: "it's $(touch pwned)" },
      { id: 'u1', name: 'a repeat of u1: one task' },
    ];
    writeFileSync(join(dir, 'users.jsonl'), records.map((r) => JSON.stringify(r)).join('\n') + '\n');
    const r = await runCli(['run', '--items', 'users.jsonl', '--key-field', 'id', '--exec', 'printf %s {item.name} > "$OUT"/{item.id}'], { cwd: dir, env: { OUT: out } });
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(join(out, 'u1'), 'utf8')).toBe('line one\nline two');
    expect(readFileSync(join(out, 'u2'), 'utf8')).toBe("it's $(touch pwned)");
    expect((await storedTasks(dbPathIn(dir))).map((t) => t.key).sort()).toEqual(['u1', 'u2']);
  });

  it('invalid JSON names its line and writes nothing; an item placeholder on a directory is exit 2', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'bad.jsonl'), '{"id":1}\n\n{"id":2,}\n');
    const r = await runCli(['run', '--items', 'bad.jsonl', '--exec', 'echo {}'], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/bad\.jsonl, line 3: invalid JSON/);
    expect(readdirSync(dir)).not.toContain('.splitdance');
    mkdirSync(join(dir, 'src'));
    writeFileSync(join(dir, 'src', 'a.log'), 'x');
    const d = await runCli(['run', 'src', '--exec', 'echo {item}'], { cwd: dir });
    expect(d.code).toBe(2);
    expect(d.stderr).toMatch(/\{item\} is a placeholder of an item/);
    // A batch keeps its kind of source: the same file as chunks, then as a list, would be two kinds of keys.
    writeFileSync(join(dir, 'l.txt'), 'a\nb\n');
    expect((await runCli(['run', 'l.txt', '--exec', 'true'], { cwd: dir })).code).toBe(0);
    // SQL on purpose: every column of every task, those no verb shows (seen fingerprint, output temp, lease token) included: the refused run wrote nothing.
    const before = query(dbPathIn(dir), 'SELECT * FROM tasks');
    const k = await runCli(['run', '--items', 'l.txt', '--exec', 'true'], { cwd: dir });
    expect(k.code).toBe(2);
    expect(k.stderr).toMatch(/was created from a directory or a file, not a list of lines; .*new --batch/);
    expect(query(dbPathIn(dir), 'SELECT * FROM tasks')).toEqual(before);
    const e = await runCli(['run', '-', '--exec', 'true'], { cwd: dir });
    expect(e.code).toBe(2);
    expect(e.stderr).toMatch(/stdin holds no items/);
  });

  it('{1}, {2} split on whitespace or --colsep; retry-failed --run needs neither the list nor stdin again', async () => {
    const dir = tempDir();
    const out = join(dir, 'out');
    mkdirSync(out);
    writeFileSync(join(dir, 'list.csv'), 'alpha,1\nbeta,2\n');
    const exec = ['--colsep', ',', '--exec', 'printf %s-%s {2} {1} > "$OUT"/{1}; test {1} != beta || test -e "$OUT/ok"'];
    const r = await runCli(['run', '--items', 'list.csv', '--batch', 'csv', '--retries', '0', ...exec], { cwd: dir, env: { OUT: out } });
    expect(r.code).toBe(1);
    expect(readFileSync(join(out, 'alpha'), 'utf8')).toBe('1-alpha');
    writeFileSync(join(out, 'ok'), '');
    rmSync(join(dir, 'list.csv'));
    const retry = await runCli(['retry-failed', '--batch', 'csv', '--run'], { cwd: dir, env: { OUT: out } });
    expect(retry.code, retry.stderr).toBe(0);
    expect(readFileSync(join(out, 'beta'), 'utf8')).toBe('2-beta');
  });

  it('items flow through stages, and name declared outputs with {1}; an item that is `..` or absolute cannot move an output', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'list.txt'), 'alpha one\nbeta two\n.. up\n/etc x\n');
    writeFileSync(
      join(dir, 'job.json'),
      JSON.stringify({
        stages: [
          { name: 'fetch', exec: 'printf %s {2} > {out}', output: 'out/{1}.txt' },
          { name: 'upper', needs: ['fetch'], exec: 'tr a-z A-Z < {inputs.fetch.out} > {out}', output: 'out/{1}.up' },
        ],
      }),
    );
    const r = await runCli(['run', '--items', 'list.txt', '--job', 'job.json', '--retries', '0'], { cwd: dir });
    expect(r.code).toBe(1);
    expect(readFileSync(join(dir, 'out', 'alpha.up'), 'utf8')).toBe('ONE');
    expect(readFileSync(join(dir, 'out', 'beta.up'), 'utf8')).toBe('TWO');
    // `/etc` after `out/` stays under out/; `..` is refused.
    expect(readdirSync(join(dir, 'out')).sort()).toEqual(['alpha.txt', 'alpha.up', 'beta.txt', 'beta.up', 'etc.txt', 'etc.up']);
    const failed = (await storedTasks(dbPathIn(dir))).filter((t) => t.status === 'FAILED');
    expect(failed.map((f) => f.key)).toEqual(['fetch/.. up']);
    expect(failed.every((f) => /outside the folder the template names/.test(f.lastError!))).toBe(true);

    const abs = await runCli(['run', '--items', 'list.txt', '--batch', 'abs', '--exec', 'true > {out}', '--output', '{}'], { cwd: dir });
    expect(abs.code).toBe(1);
    expect(abs.stderr).toMatch(/\{\} is "\/etc x", which would put the output outside/);
  });

  // The million-item run, with its peak RSS, is `npm run bench`'s "items enqueue" row.
  const many = process.env.SPLITDANCE_LONG === '1' ? 1_000_000 : 20_000;
  it(`${many} items from stdin are enqueued, streaming, each once`, async () => {
    const dir = tempDir();
    const input = Array.from({ length: many }, (_, i) => `id-${i}`).join('\n') + '\nid-0\n';
    const r = await runCli(['run', '-', '--exec', 'true', '--max-runtime', '1ms', '-j', '1'], { cwd: dir, input, timeoutMs: 600_000 });
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toMatch(/1 item of the list repeated/);
    // One task per key ((batch, stage, key) is unique): the batch's total is the count of distinct keys.
    expect((await statusJson(dir)).total).toBe(many);
  }, 600_000);

  it('a job file names the list ("items", "-" for stdin) and "pipe"; its fields are validated', async () => {
    const dir = tempDir();
    const out = join(dir, 'out');
    mkdirSync(out);
    writeFileSync(join(dir, 'hosts.txt'), 'h1\nh2\n');
    writeFileSync(join(dir, 'splitdance.json'), JSON.stringify({ items: 'hosts.txt', exec: 'cat > "$OUT"/{}', pipe: true }));
    const r = await runCli(['run'], { cwd: dir, env: { OUT: out } });
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(join(out, 'h1'), 'utf8')).toBe('h1\n');
    writeFileSync(join(dir, 'bad.json'), JSON.stringify({ items: 'hosts.txt', handler: 'x.mjs', pipe: true }));
    const bad = await runCli(['run', '--job', 'bad.json'], { cwd: dir });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/"pipe" goes with "exec"/);
  });
});
