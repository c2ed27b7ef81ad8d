import { mkdirSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, sleep, startCli, tempDir, waitFor } from '../helpers/cli.js';
import { processesWithEnv } from '../helpers/procs.js';
import { LONG, prng, seedFor } from './prng.js';

/**
 * Declared outputs under kill -9 (SPEC §4): commands write large outputs slowly; the
 * coordinator — or the coordinator and every process under it — is SIGKILLed at random
 * moments. A watcher looks at the output folder all along: an output path may be missing,
 * never partial. The resumed run completes with no temporary file left anywhere.
 */
const FILES = 12;
const COPIES = 8;

function project(): { dir: string; out: string; sizes: Map<string, number> } {
  const dir = tempDir('sd-outkill-');
  mkdirSync(join(dir, 'src'));
  const sizes = new Map<string, number>();
  const past = new Date(Date.now() - 3_600_000);
  for (let i = 0; i < FILES; i++) {
    const name = `f${String(i).padStart(2, '0')}.bin`;
    const body = Buffer.alloc(64 * 1024 + i * 1000, 65 + i);
    writeFileSync(join(dir, 'src', name), body);
    utimesSync(join(dir, 'src', name), past, past);
    sizes.set(`${name}.out`, body.length * COPIES);
  }
  return { dir, out: join(dir, 'out'), sizes };
}

/** Looks at every output path every few ms; records any that holds a file of the wrong size. */
function watchOutputs(out: string, sizes: Map<string, number>): { stop(): string[] } {
  const bad: string[] = [];
  const timer = setInterval(() => {
    let names: string[];
    try {
      names = readdirSync(out);
    } catch {
      return;
    }
    for (const n of names) {
      if (n.startsWith('.')) continue; // a temporary file: partial by design
      try {
        const size = statSync(join(out, n)).size;
        if (size !== sizes.get(n)) bad.push(`${n}: ${size} bytes, expected ${sizes.get(n)}`);
      } catch {
        // renamed over meanwhile
      }
    }
  }, 3);
  return {
    stop() {
      clearInterval(timer);
      return bad;
    },
  };
}

// Writes the input COPIES times, 20 ms apart: an output half written is there to be seen.
const EXEC = `for i in $(seq ${COPIES}); do cat {}; sleep 0.02; done > {out}`;

describe.each([
  { what: 'the coordinator', whole: false },
  { what: 'the coordinator, its workers and their commands', whole: true },
])('declared outputs: kill -9 of $what at random moments', ({ whole }) => {
  const kills = LONG ? 40 : 10;
  const seed = seedFor(whole ? 20261203 : 20261204);

  it(`${kills} kills (seed ${seed}): never a partial output; the resumed run completes with no temporary file left`, async () => {
    const rand = prng(seed);
    const p = project();
    const marker = p.dir;
    const env = { OUTPUT_KILLS: marker };
    const args = ['run', 'src', '--exec', EXEC, '--output', 'out/{name}.out', '-j', '2', '--retries', '1000', '--backoff', '10ms', '--quiet'];
    const watch = watchOutputs(p.out, p.sizes);
    for (let k = 0; k < kills; k++) {
      const child = startCli(args, { cwd: p.dir, env });
      const r = await Promise.race([child.result, sleep(150 + Math.floor(rand() * 450)).then(() => null)]);
      if (r) {
        expect(r.code, r.stderr).toBe(0);
        break;
      }
      if (whole) {
        // Everything at once, workers first: nothing of the run is left to clean up after itself.
        for (const pid of processesWithEnv(marker).filter((pid) => pid !== child.pid)) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // gone already
          }
        }
      }
      child.kill('SIGKILL');
      await child.result;
      await waitFor(() => processesWithEnv(marker).length === 0, 2000, 'the run to be gone');
    }
    const final = await runCli(args, { cwd: p.dir, env });
    expect(final.code, final.stderr).toBe(0);
    expect(watch.stop()).toEqual([]);
    expect(readdirSync(p.out).sort()).toEqual([...p.sizes.keys()].sort()); // every output, and nothing else
    for (const [name, size] of p.sizes) expect(statSync(join(p.out, name)).size).toBe(size);
  });
});

describe('declared outputs: a crash right after recovery records a dead run\'s attempt LOST', () => {
  const args = (exec: string) => ['run', 'src', '--exec', exec, '--output', 'out/{name}.out', '-j', '1', '--quiet'];
  const SLOW = 'echo x > {out}; sleep 30';

  /** A project whose one attempt died holding its temporary file: every process of that run SIGKILLed. */
  async function deadAttempt(): Promise<{ dir: string; env: NodeJS.ProcessEnv }> {
    const dir = tempDir('sd-outkill-release-');
    mkdirSync(join(dir, 'src'));
    writeFileSync(join(dir, 'src', 'a.txt'), 'a\n');
    const env = { OUTPUT_KILLS: dir };
    const child = startCli(args(SLOW), { cwd: dir, env });
    await waitFor(() => temps(dir).length === 1, 10_000, 'the attempt to open its temporary file');
    // Killed until none is left: one killed before its coordinator may have been replaced by a
    // worker the listing did not hold yet (on a busy machine it is still starting).
    const killAll = () => {
      for (const pid of processesWithEnv(dir)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone already
        }
      }
      return processesWithEnv(dir).length === 0;
    };
    killAll();
    await child.result;
    await waitFor(killAll, 10_000, 'the run to be gone');
    return { dir, env };
  }

  const temps = (dir: string) => {
    try {
      return readdirSync(join(dir, 'out')).filter((n) => n.endsWith('.tmp'));
    } catch {
      return [];
    }
  };

  it('leaves no temporary file of that attempt: it goes before the release is committed', async () => {
    // SPLITDANCE_FAILPOINT=write:K SIGKILLs the next run right after its K-th committed write:
    // walk K until that write is the release (the attempt is then LOST in the store).
    let tried = 0;
    for (let k = 1; k <= 6; k++) {
      const { dir, env } = await deadAttempt();
      const crashed = await runCli(args(SLOW), { cwd: dir, env: { ...env, SPLITDANCE_FAILPOINT: `write:${k}` } });
      expect(crashed.signal, crashed.stderr).toBe('SIGKILL');
      const show = await runCli(['show', 'a.txt', '--json'], { cwd: dir });
      const outcomes = (JSON.parse(show.stdout) as { attempts: { attempt: number; outcome: string | null }[] }).attempts.map((a) => a.outcome);
      if (outcomes[0] !== 'LOST') {
        // Not released yet: the dead attempt's file is still there, for the next recovery.
        expect(temps(dir)).toHaveLength(1);
        continue;
      }
      tried++;
      // Released, and killed before anything after the commit could run: the file went with it.
      expect(temps(dir).filter((n) => n.includes('-1-'))).toEqual([]);
      for (const pid of processesWithEnv(dir)) process.kill(pid, 'SIGKILL'); // an attempt it may have started since
      const final = await runCli(args('echo x > {out}'), { cwd: dir, env });
      expect(final.code, final.stderr).toBe(0);
      expect(readdirSync(join(dir, 'out'))).toEqual(['a.txt.out']);
      break;
    }
    expect(tried, 'no K killed the run right after the release').toBe(1);
  });
});
