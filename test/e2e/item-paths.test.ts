import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, tempDir } from '../helpers/cli.js';

/**
 * Issue 41, item 1, through the built CLI: `find … | splitdance run -` with path placeholders
 * writes what GNU parallel writes for the same list (not `./-.gz`, the list's own path, for every task).
 */

/** Every file under `dir`, as relative path → content. */
function files(dir: string): Record<string, string> {
  const found: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of readdirSync(d)) {
      const p = join(d, e);
      if (e === '.splitdance') continue;
      if (statSync(p).isDirectory()) walk(p);
      else found[relative(dir, p)] = readFileSync(p).toString('base64');
    }
  };
  walk(dir);
  return found;
}

function tree(dir: string): string[] {
  const paths = ['tree/sub/one.txt', 'tree/two.log', 'tree/a.b/c', 'tree/.bashrc', 'tree/sub/deep/three.tar.xz'];
  for (const p of paths) {
    mkdirSync(join(dir, p, '..'), { recursive: true });
    writeFileSync(join(dir, p), `${p}\n`.repeat(20));
  }
  return paths;
}

describe('a list of paths', () => {
  it("find … | run - --exec 'gzip -c {} > {.}.gz' writes each .gz beside its file, the files parallel writes", async () => {
    const [ours, theirs] = [tempDir('sd-ipath-'), tempDir('sd-ipath-')];
    const list = tree(ours).join('\n') + '\n';
    tree(theirs);
    const r = await runCli(['run', '-', '--exec', 'gzip -nc {} > {.}.gz', '--quiet'], { cwd: ours, input: list });
    expect(r.code, r.stderr).toBe(0);
    execFileSync('parallel', ['--will-cite', 'gzip -nc {} > {.}.gz'], { cwd: theirs, input: list });
    expect(files(ours)).toEqual(files(theirs));
    expect(Object.keys(files(ours))).toEqual(expect.arrayContaining(['tree/sub/one.gz', 'tree/sub/deep/three.tar.gz', 'tree/a.b/c.gz', 'tree/.gz']));
  });

  it("a declared output rendered from the item: --output '{.}.gz' puts each output beside its file", async () => {
    const dir = tempDir('sd-ipath-');
    writeFileSync(join(dir, 'list.txt'), tree(dir).filter((p) => !p.endsWith('.bashrc')).join('\n') + '\n');
    const r = await runCli(['run', '--items', 'list.txt', '--output', 'gz/{.}.gz', '--exec', 'gzip -nc {} > {out}', '--quiet'], { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    expect(Object.keys(files(join(dir, 'gz'))).sort()).toEqual(['tree/a.b/c.gz', 'tree/sub/deep/three.tar.gz', 'tree/sub/one.gz', 'tree/two.gz']);
  });
});
