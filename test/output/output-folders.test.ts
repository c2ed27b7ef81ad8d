import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { SerializedError } from '../../src/errors.js';
import { finishOutput, placeOutput, prepareOutput } from '../../src/output/commit-output.js';
import { outputPathsOf } from '../../src/output/output-path.js';
import { tempDir } from '../helpers/cli.js';

const STORE = 'a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6';

/** A file task under `base/src`, its output rendered by `template` relative to `base`. */
function pathsFor(base: string, rel: string, template = 'out/{rel}.gz', token = 7) {
  const task = { key: rel, batch: 'b', stage: '', seq: 1, attempt: 1, payload: { version: 1 as const, path: join(base, 'src', rel), rel }, inputs: {} };
  return outputPathsOf({ template, base }, task, STORE, token);
}

/** A folder with a victim file, and `out/` made by the user. */
function setting() {
  const base = tempDir('sd-folders-');
  const elsewhere = join(base, 'elsewhere');
  mkdirSync(elsewhere);
  writeFileSync(join(elsewhere, 'x.log.gz'), 'VICTIM');
  mkdirSync(join(base, 'out'));
  return { base, elsewhere };
}

const ok: { ok: boolean; result: string | null; error: SerializedError | null } = { ok: true, result: null, error: null };

describe("an output's folders below the folder the template names", () => {
  it('are made as the umask says without following a link; one planted before the attempt fails it for good naming the link', () => {
    const { base, elsewhere } = setting();
    const fine = pathsFor(base, 'b/c/y.log');
    expect(prepareOutput(fine)).toHaveProperty('folder');
    expect(statSync(join(base, 'out', 'b', 'c')).mode & 0o777).toBe(0o777 & ~process.umask()); // the user's data, as the files are

    symlinkSync(elsewhere, join(base, 'out', 'a'));
    const planted = prepareOutput(pathsFor(base, 'a/x.log'));
    expect(planted).toMatchObject({ error: { name: 'PermanentError', retryable: false } });
    expect((planted as { error: { message: string } }).error.message).toContain(`${join(base, 'out', 'a')} is one (to ${elsewhere})`);
    expect(readdirSync(elsewhere)).toEqual(['x.log.gz']);
  });

  it('a link planted while the command ran fails the attempt, and its file is not kept', async () => {
    const { base, elsewhere } = setting();
    const out = pathsFor(base, 'a/x.log');
    const prepared = prepareOutput(out);
    if (!('folder' in prepared)) throw new Error(prepared.error.message);
    renameSync(join(base, 'out', 'a'), join(base, 'aside'));
    symlinkSync(elsewhere, join(base, 'out', 'a'));
    writeFileSync(out.temp, 'new'); // the command writes {out}: through the link
    const ended = await finishOutput(out, ok, 'test', prepared.folder);
    expect(ended).toMatchObject({ ok: false, error: { retryable: false } });
    expect(ended.error!.message).toContain(`${join(base, 'out', 'a')} is one`);
    expect(readdirSync(elsewhere)).toEqual(['x.log.gz']);
    expect(readFileSync(join(elsewhere, 'x.log.gz'), 'utf8')).toBe('VICTIM');
  });

  it('a rename (also one redone from the store by recovery) never goes through a link planted after the commit', async () => {
    const { base, elsewhere } = setting();
    const out = pathsFor(base, 'a/x.log');
    const prepared = prepareOutput(out);
    if (!('folder' in prepared)) throw new Error(prepared.error.message);
    writeFileSync(out.temp, 'new');
    expect(await finishOutput(out, ok, 'test', prepared.folder)).toMatchObject({ ok: true });
    // After the commit: the folder is swapped for a link, with the temporary file moved along.
    renameSync(join(base, 'out', 'a'), join(base, 'aside'));
    renameSync(join(base, 'aside', readdirSync(join(base, 'aside'))[0]!), join(elsewhere, out.temp.split('/').at(-1)!));
    symlinkSync(elsewhere, join(base, 'out', 'a'));
    for (const late of [false, true]) {
      const failed = await placeOutput({ path: out.path, temp: out.temp }, late);
      expect(failed).toMatchObject({ missing: false });
      expect(failed!.error).toContain(`${join(base, 'out', 'a')} is one`);
    }
    expect(readFileSync(join(elsewhere, 'x.log.gz'), 'utf8')).toBe('VICTIM');
  });

  it('a link the user typed (the template\'s own folders, the source folder of `{}`) is followed', async () => {
    const { base } = setting();
    mkdirSync(join(base, 'disk'));
    symlinkSync(join(base, 'disk'), join(base, 'data'));
    for (const out of [pathsFor(base, 'a/x.log', 'data/out/{rel}.gz'), pathsFor(join(base, 'data'), 'a/x.log', '{}.gz')]) {
      const prepared = prepareOutput(out);
      if (!('folder' in prepared)) throw new Error(prepared.error.message);
      writeFileSync(out.temp, 'new');
      expect(await finishOutput(out, ok, 'test', prepared.folder)).toMatchObject({ ok: true });
      expect(await placeOutput(out)).toBeNull();
      expect(readFileSync(out.path, 'utf8')).toBe('new');
    }
    expect(existsSync(join(base, 'disk', 'out', 'a', 'x.log.gz'))).toBe(true);
    expect(existsSync(join(base, 'disk', 'src', 'a', 'x.log.gz'))).toBe(true);
  });
});
