import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, runCli, sleep, tempDir, waitFor, type CliResult } from '../helpers/cli.js';
import { processesWithEnv } from '../helpers/procs.js';
import { dbPathIn, logEntries, storedAttempts } from '../helpers/store.js';
import { checkInvariants } from './invariants.js';
import { LONG, prng, seedFor } from './prng.js';

// RELIABILITY R46: the fault campaign's kill schedule as a promise. SIGKILLs at random moments
// of the coordinator alone, of one spawner helper, of the coordinator's process group, and of
// the whole tree after stopping it (SIGSTOP first, as a container freeze then kill does), over
// a batch of --exec tasks with declared outputs. After the schedule one more run finishes it:
// 0 lost, 0 keys run twice at once (a per-key flock canary: a lock is freed only when its
// holder is gone), 0 temporary files, every output written by the attempt the store committed.

const TASKS = LONG ? 4000 : 800;
const KILLS = LONG ? 200 : 40;
const TARGETS = ['coordinator', 'helper', 'group', 'stopped tree'] as const;

// Each attempt: take the key's canary lock (a lock still held means another attempt of the key
// runs now), log its start, write "key attempt" to its output, sleep, log its end.
const TASK_SCRIPT = `#!/bin/sh
set -e
exec 9>"$CANARY_DIR/$SPLITDANCE_KEY.lock"
if ! flock -n 9; then
  printf '{"type":"double","key":"%s","pid":%s,"holder":0}\\n' "$SPLITDANCE_KEY" $$ >> "$SIDE_EFFECT_LOG"
  flock 9
fi
start=$(date +%s%3N)
printf '{"type":"start","key":"%s","attempt":%s,"pid":%s,"at":%s}\\n' "$SPLITDANCE_KEY" "$SPLITDANCE_ATTEMPT" $$ "$start" >> "$SIDE_EFFECT_LOG"
printf '%s %s\\n' "$SPLITDANCE_KEY" "$SPLITDANCE_ATTEMPT" > "$1"
sleep 0.02
printf '{"type":"end","key":"%s","attempt":%s,"pid":%s,"start":%s,"end":%s}\\n' "$SPLITDANCE_KEY" "$SPLITDANCE_ATTEMPT" $$ "$start" "$(date +%s%3N)" >> "$SIDE_EFFECT_LOG"
`;

function project(): { dir: string; keys: string[]; log: string } {
  const dir = tempDir('sd-r46-');
  mkdirSync(join(dir, 'src'));
  mkdirSync(join(dir, 'canaries'));
  const keys: string[] = [];
  for (let i = 0; i < TASKS; i++) {
    const key = `f${String(i).padStart(4, '0')}.txt`;
    writeFileSync(join(dir, 'src', key), `${i}\n`);
    keys.push(key);
  }
  writeFileSync(join(dir, 'task.sh'), TASK_SCRIPT);
  chmodSync(join(dir, 'task.sh'), 0o755);
  return { dir, keys, log: join(dir, 'side-effects.ndjson') };
}

/** The CLI in a process group of its own (so `kill -9 -PGID` takes the coordinator's group, never the test's). */
function startRun(args: string[], cwd: string, env: NodeJS.ProcessEnv): { pid: number; result: Promise<CliResult> } {
  const child = spawn(process.execPath, [BIN, ...args], { cwd, env: { ...process.env, NO_COLOR: '1', ...env }, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  let stderr = '';
  child.stderr.on('data', (b) => (stderr += b));
  const result = new Promise<CliResult>((done) => child.on('exit', (code, signal) => done({ code, signal, stdout: '', stderr })));
  return { pid: child.pid!, result };
}

const kill = (pid: number, signal: NodeJS.Signals) => {
  try {
    process.kill(pid, signal);
  } catch {
    // gone already
  }
};
const comm = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
};

describe('the kill campaign (R46)', () => {
  const seed = seedFor(20261206);

  it(`${KILLS} random SIGKILLs of coordinator, helper, group and stopped tree over ${TASKS} tasks with outputs (seed ${seed}): 0 lost, 0 twice at once, 0 temporary files, every output the committed attempt's`, async () => {
    const rand = prng(seed);
    const p = project();
    const env = { SIDE_EFFECT_LOG: p.log, CANARY_DIR: join(p.dir, 'canaries'), SD_MARK: p.dir };
    const args = ['run', 'src', '--exec', `./task.sh {out}`, '--output', 'out/{name}.out', '-j', '2', '--retries', '1000', '--backoff', '10ms', '--quiet'];
    const hits = new Map<string, number>();
    let run: { pid: number; result: Promise<CliResult> } | null = null;
    let finishedEarly = false;
    for (let k = 0; k < KILLS; ) {
      run ??= startRun(args, p.dir, env);
      const ended = await Promise.race([run.result, sleep(100 + Math.floor(rand() * 400)).then(() => null)]);
      if (ended) {
        expect(ended.code, ended.stderr).toBe(0);
        finishedEarly = true;
        break;
      }
      const target = TARGETS[Math.floor(rand() * TARGETS.length)]!;
      const ours = processesWithEnv(p.dir);
      if (target === 'helper') {
        // A run just restarted has no helper until its pool starts, which takes seconds under a
        // loaded machine's start-up of Node: wait for one (a kill of the run's start-up is the
        // other targets'), or every draw of this target could fall before one exists.
        let helpers = ours.filter((pid) => comm(pid) === 'spawner');
        for (const until = Date.now() + 30_000; helpers.length === 0 && Date.now() < until; ) {
          const over = await Promise.race([run.result, sleep(20).then(() => null)]);
          if (over) break;
          helpers = processesWithEnv(p.dir).filter((pid) => comm(pid) === 'spawner');
        }
        if (helpers.length === 0) continue; // the run ended, or none came: draw again
        kill(helpers[Math.floor(rand() * helpers.length)]!, 'SIGKILL');
        k++;
        hits.set(target, (hits.get(target) ?? 0) + 1);
        continue; // the run goes on: its pool replaces the helper
      }
      if (target === 'coordinator') kill(run.pid, 'SIGKILL');
      if (target === 'group') kill(-run.pid, 'SIGKILL');
      if (target === 'stopped tree') {
        for (const pid of ours) kill(pid, 'SIGSTOP');
        for (const pid of processesWithEnv(p.dir)) kill(pid, 'SIGKILL');
      }
      k++;
      hits.set(target, (hits.get(target) ?? 0) + 1);
      await run.result;
      run = null;
      // What outlives a coordinator (helpers, commands) must go by itself, and soon.
      await waitFor(() => processesWithEnv(p.dir).length === 0, 5000, `every process of the run gone after a kill of the ${target}`);
    }
    if (run) {
      kill(run.pid, 'SIGKILL');
      await run.result;
      await waitFor(() => processesWithEnv(p.dir).length === 0, 5000, 'every process of the run gone');
    }
    expect(finishedEarly, `the batch finished before ${KILLS} kills: make it bigger`).toBe(false);
    expect([...hits.keys()].sort()).toEqual([...TARGETS].sort());

    const final = await runCli(args, { cwd: p.dir, env, timeoutMs: 300_000 });
    expect(final.code, final.stderr).toBe(0);

    const db = dbPathIn(p.dir);
    // The side-effect log saw every task start (the canary and intervals below read it).
    expect(new Set(logEntries(p.log).filter((e) => e.type === 'start').map((e) => e.key)).size).toBe(TASKS);
    // 0 lost, one terminal state each, 0 twice at once (the canary and the logged intervals).
    // Every kill may hit each slot's running attempt and the ones queued behind it (short tasks
    // get a window of up to 64 a slot), so only I4's upper bound is loosened.
    expect(checkInvariants({ dbPath: db, keys: p.keys, retries: 1000, logPath: p.log, kills: KILLS, concurrency: 2, heldPerSlot: 64 })).toEqual([]);
    // 0 temporary files: the output folder holds exactly the outputs.
    const out = readdirSync(join(p.dir, 'out')).sort();
    expect(out).toEqual(p.keys.map((k) => `${k}.out`).sort());
    // Every output is the committed attempt's own.
    const committed = new Map((await storedAttempts(db)).filter((a) => a.outcome === 'SUCCESS').map((a) => [a.key, a.attempt]));
    const wrong = p.keys.filter((key) => readFileSync(join(p.dir, 'out', `${key}.out`), 'utf8') !== `${key} ${committed.get(key)}\n`);
    expect(wrong).toEqual([]);
  }, LONG ? 1_800_000 : 300_000);
});
