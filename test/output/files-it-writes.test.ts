import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { handler } from '../helpers/cli.js';
import { jsonOf, mainIn, mainInProcessEnv } from '../helpers/in-process-cli.js';
import { missing } from '../helpers/services.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn } from '../helpers/store.js';

// SPEC §9, "Files splitdance writes": a path it replaces (--output, --metrics-file, report
// --html) is missing or a regular file, never a device, FIFO, folder or symlink, never the
// store's own files or a task's input; its temporary files are created exclusively.

const isRoot = !missing('root', 'the device and full-disk cases (mknod, a tmpfs)');
const mounts: string[] = [];
afterAll(() => {
  for (const m of mounts) execFileSync('umount', ['-l', m]);
});

/** A private copy of /dev/null (`mknod c 1 3`, root only) — never the system's own. */
function devNull(dir: string): string {
  const path = join(dir, 'devnull');
  execFileSync('mknod', [path, 'c', '1', '3']);
  return path;
}

/** Every kind of thing a path can hold that is not a regular file, made in `dir`. */
function notFiles(dir: string): { name: string; path: string; kept: () => boolean }[] {
  const victim = join(dir, 'victim.txt');
  writeFileSync(victim, 'precious\n');
  const link = join(dir, 'link');
  symlinkSync(victim, link);
  const fifo = join(dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  const folder = join(dir, 'folder');
  mkdirSync(folder);
  const things = [
    { name: 'a symlink', path: link, kept: () => lstatSync(link).isSymbolicLink() && readFileSync(victim, 'utf8') === 'precious\n' },
    { name: 'a FIFO', path: fifo, kept: () => lstatSync(fifo).isFIFO() },
    { name: 'a folder', path: folder, kept: () => lstatSync(folder).isDirectory() && readdirSync(folder).length === 0 },
  ];
  if (isRoot) {
    const dev = devNull(dir);
    things.push({ name: 'a device', path: dev, kept: () => lstatSync(dev).isCharacterDevice() });
  }
  return things;
}

describe('a path splitdance replaces must be missing or a regular file', () => {
  it('a device (a private /dev/null), FIFO, folder or symlink at --metrics-file or --output: exit 2, nothing written, the thing intact', async () => {
    const p = projectWithFiles(1);
    for (const thing of notFiles(p.dir)) {
      for (const args of [
        ['--exec', 'cat {}', '--metrics-file', thing.path],
        ['--exec', 'cat {} > {out}', '--output', thing.path],
      ]) {
        const r = await mainIn(p.dir, ['run', 'src', ...args]);
        expect(r.code, `${thing.name} ${args.join(' ')}: ${r.stderr}`).toBe(2);
        expect(r.stderr).toContain(`is ${thing.name}`);
        expect(r.stderr.trim().split('\n')).toHaveLength(1);
        expect(thing.kept(), thing.name).toBe(true);
        expect(existsSync(join(p.dir, '.splitdance')), 'no store created').toBe(false);
      }
    }
  });

  it('report --html at a device, FIFO, folder or symlink, or its default name planted as a symlink: exit 2, the thing and its target intact', async () => {
    const p = projectWithFiles(1);
    const ran = await mainIn(p.dir, ['run', 'src', '--exec', 'true', '--batch', 'b']);
    expect(ran.code, ran.stderr).toBe(0);
    for (const thing of notFiles(p.dir)) {
      const r = await mainIn(p.dir, ['report', '--html', thing.path]);
      expect(r.code, `${thing.name}: ${r.stderr}`).toBe(2);
      expect(thing.kept(), thing.name).toBe(true);
    }
    // The store's own file is never a report.
    const store = dbPathIn(p.dir);
    const before = readFileSync(store);
    const onStore = await mainIn(p.dir, ['report', '--html', store]);
    expect(onStore.code, onStore.stderr).toBe(2);
    expect(onStore.stderr).toContain("the store's");
    expect(readFileSync(store).equals(before)).toBe(true);
    // The default name, planted beforehand as a symlink to a file of the user's.
    const made = await mainIn(p.dir, ['report', '--json']);
    const name = JSON.parse(made.stdout).file as string;
    rmSync(name);
    const victim = join(p.dir, 'notes.txt');
    writeFileSync(victim, 'mine\n');
    symlinkSync(victim, name);
    const r = await mainIn(p.dir, ['report']);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain('is a symlink');
    expect(readFileSync(victim, 'utf8')).toBe('mine\n');
    // A regular file is replaced, keeping its mode; a new one is 0600.
    const fresh = await mainIn(p.dir, ['report', '--html', 'r.html']);
    expect(fresh.code, fresh.stderr).toBe(0);
    expect(statSync(join(p.dir, 'r.html')).mode & 0o777).toBe(0o600);
  });

  it.skipIf(!isRoot)('report on a full disk: exit 2 naming the file and the fix, not "unexpected error"', async () => {
    const p = projectWithFiles(1);
    expect((await mainIn(p.dir, ['run', 'src', '--exec', 'true'])).code).toBe(0);
    const full = join(p.dir, 'full');
    mkdirSync(full);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', full]);
    mounts.push(full);
    try {
      execFileSync('dd', ['if=/dev/zero', `of=${join(full, 'fill')}`, 'bs=4k'], { stdio: 'ignore' });
    } catch {
      // dd ends with ENOSPC: the disk is full
    }
    const r = await mainIn(p.dir, ['report', '--html', join(full, 'r.html')]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain('no space left');
    expect(r.stderr).not.toContain('unexpected error');
    expect(readdirSync(full)).toEqual(['fill']); // no temporary file left
  });
});

describe('the store path', () => {
  it('commands that only read never write: an empty file stays empty; a device (a private /dev/null) or FIFO at --db is refused with no journal beside it', async () => {
    const p = projectWithFiles(1);
    const empty = join(p.dir, 'empty.db');
    writeFileSync(empty, '');
    const odd = [join(p.dir, 'fifo.db')];
    execFileSync('mkfifo', [odd[0]!]);
    if (isRoot) odd.push(devNull(p.dir));
    for (const cmd of [['status'], ['tasks'], ['batches'], ['report', '--html', join(p.dir, 'r.html')], ['run', 'src', '--exec', 'true', '--dry-run']]) {
      const r = await mainIn(p.dir, [...cmd, '--db', empty]);
      if (cmd[0] !== 'run') expect(r.code, `${cmd[0]}: ${r.stderr}`).toBe(4);
      expect(statSync(empty).size, cmd[0]).toBe(0);
      for (const db of odd) {
        const o = await mainIn(p.dir, [...cmd, '--db', db]);
        expect(o.code, `${cmd[0]} --db ${db}: ${o.stderr}`).toBe(4);
        expect(o.stderr).toMatch(/is a (device|FIFO), not a store file/);
      }
    }
    expect(readdirSync(p.dir).filter((f) => /-(journal|wal|shm)$/.test(f))).toEqual([]);
    expect(existsSync(join(p.dir, 'r.html'))).toBe(false);
  });
});

describe("the store's files and the tasks' inputs are never outputs", () => {
  it("--metrics-file or --output naming the live store's files or its logs folder: exit 2, every batch kept", async () => {
    const p = projectWithFiles(2);
    const first = await mainIn(p.dir, ['run', 'src', '--exec', 'true', '--batch', 'kept']);
    expect(first.code, first.stderr).toBe(0);
    const db = dbPathIn(p.dir);
    for (const path of [db, `${db}-wal`, `${db}-shm`, `${db}-journal`, join(p.dir, '.splitdance', 'logs', 'm.prom')]) {
      const metrics = await mainIn(p.dir, ['run', 'src', '--exec', 'true', '--batch', 'new', '--metrics-file', path]);
      expect(metrics.code, metrics.stderr).toBe(2);
      expect(metrics.stderr).toContain("the store's");
    }
    for (const template of ['.splitdance/splitdance.db', '.splitdance/logs/{name}', '.splitdance/{name}']) {
      const out = await mainIn(p.dir, ['run', 'src', '--exec', 'cat {} > {out}', '--batch', 'new', '--output', template]);
      expect(out.code, `${template}: ${out.stderr}`).toBe(2);
      expect(out.stderr).toContain("the store's");
    }
    expect((await jsonOf<{ batch: string }[]>(p.dir, ['batches'])).map((b) => ({ name: b.batch }))).toEqual([{ name: 'kept' }]);
  });

  it("a constant --output over two tasks is a collision; one naming another task's input is refused: exit 2, the input intact", async () => {
    const p = projectWithFiles(2);
    const constant = await mainIn(p.dir, ['run', 'src', '--exec', 'cat {} > {out}', '--output', 'out/all.txt']);
    expect(constant.code, constant.stderr).toBe(2);
    expect(constant.stderr).toContain('gives two tasks one output file');
    const input = join(p.src, p.keys[1]!);
    const other = await mainIn(p.dir, ['run', 'src', '--exec', 'cat {} > {out}', '--output', `src/${p.keys[1]}`]);
    expect(other.code, other.stderr).toBe(2);
    expect(other.stderr).toContain(`would overwrite the input of ${p.keys[1]}`);
    expect(readFileSync(input, 'utf8')).toBe('line 1\n');
    expect(existsSync(join(p.dir, '.splitdance'))).toBe(false);
  });
});

describe("declared outputs' temporary files", () => {
  it('cannot be planted: a symlink or a file at any name an attempt could be expected to use is never written through nor committed', async () => {
    const p = projectWithFiles(2);
    const out = join(p.dir, 'out');
    mkdirSync(out);
    const victim = join(p.dir, 'victim.txt');
    writeFileSync(victim, 'precious\n');
    // The names of attempts 1–20 as they used to be (`.NAME.splitdance-<attempt id>.tmp`): f000's
    // are symlinks to a file of the user's, f001's are regular files ready to pass for an output.
    for (let id = 1; id <= 20; id++) {
      symlinkSync(victim, join(out, `.${p.keys[0]}.splitdance-${id}.tmp`));
      writeFileSync(join(out, `.${p.keys[1]}.splitdance-${id}.tmp`), 'planted\n');
    }
    const exec = `case {} in *${p.keys[1]}) true;; *) cat {} > {out};; esac`; // f001 writes nothing
    const r = await mainIn(p.dir, ['run', 'src', '--exec', exec, '--output', 'out/{rel}', '--retries', '0']);
    expect(r.code, r.stderr).toBe(1);
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
    expect(lstatSync(join(out, p.keys[0]!)).isFile()).toBe(true);
    expect(readFileSync(join(out, p.keys[0]!), 'utf8')).toBe('line 0\n');
    const tasks = JSON.parse((await mainIn(p.dir, ['tasks', '--json'])).stdout) as { key: string; status: string; lastError: string }[];
    expect(tasks.find((t) => t.key === p.keys[1])).toMatchObject({ status: 'FAILED', lastError: expect.stringContaining('declared output not written') });
    expect(existsSync(join(out, p.keys[1]!))).toBe(false);
  });

  it('two stores writing one output folder never share a temporary file: each output is one batch\'s whole file', async () => {
    const p = projectWithFiles(3);
    // Each attempt appends two lines with a pause between, so a shared temporary file would mix them.
    const exec = 'echo "$SPLITDANCE_BATCH 1" >> {out}; sleep 0.3; echo "$SPLITDANCE_BATCH 2" >> {out}';
    const run = (name: string) => mainIn(p.dir, ['run', 'src', '--exec', exec, '--output', 'out/{rel}', '--db', join(p.dir, `${name}.db`), '--batch', name, '--force']);
    const [a, b] = await Promise.all([run('alpha'), run('beta')]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    for (const k of p.keys) expect(['alpha 1\nalpha 2\n', 'beta 1\nbeta 2\n']).toContain(readFileSync(join(p.dir, 'out', k), 'utf8'));
    expect(readdirSync(join(p.dir, 'out')).sort()).toEqual(p.keys);
  });

  // Issue 41: output folders were 0700 whatever the umask; they are the user's data, as the files are.
  it.each([
    ['000', 0o777, 0o666],
    ['027', 0o750, 0o640],
  ])('under umask %s, output folders and files follow the umask; the store and its logs stay private', async (umask, folder, file) => {
    const p = projectWithFiles(1);
    const old = process.umask(parseInt(umask, 8));
    let r: Awaited<ReturnType<typeof mainIn>>;
    try {
      r = await mainIn(p.dir, ['run', 'src', '--exec', 'cat {} > {out}', '--output', 'out/deep/{rel}', '--quiet']);
    } finally {
      process.umask(old);
    }
    expect(r.code, r.stderr).toBe(0);
    expect(statSync(join(p.dir, 'out')).mode & 0o777).toBe(folder);
    expect(statSync(join(p.dir, 'out', 'deep')).mode & 0o777).toBe(folder);
    expect(statSync(join(p.dir, 'out', 'deep', p.keys[0]!)).mode & 0o777).toBe(file);
    expect(statSync(join(p.dir, '.splitdance')).mode & 0o777).toBe(0o700);
  });
});

describe('an output path only a stage result names', () => {
  it.each([
    ['"."', '.', /not a file path/],
    ['""', '', /not a file path/],
    ['the name of a folder there', 'taken', /is a folder, not a regular file/],
  ])('rendering to %s fails its task for good: never SUCCESS, never up to date', async (_what, name, message) => {
    const p = projectWithFiles(1);
    mkdirSync(join(p.dir, 'out', 'b', 'taken'), { recursive: true });
    const job = {
      source: 'src',
      stages: [
        { name: 'a', handler: handler('write-out'), output: 'out/a/{rel}' },
        { name: 'b', needs: ['a'], exec: 'cat {} > {out}', output: 'out/b/{inputs.a.name}' },
      ],
    };
    writeFileSync(join(p.dir, 'job.json'), JSON.stringify(job));
    const r = await mainInProcessEnv(p.dir, ['run', '--job', 'job.json'], { RESULT_NAME: name });
    expect(r.code, r.stderr).toBe(1);
    const b = JSON.parse((await mainIn(p.dir, ['show', `b/${p.keys[0]}`, '--json'])).stdout);
    expect(b).toMatchObject({ status: 'FAILED', attemptsCount: 1 });
    expect(b.lastError).toMatch(message);
    expect(readdirSync(join(p.dir, 'out', 'b', 'taken'))).toEqual([]);
  });
});
