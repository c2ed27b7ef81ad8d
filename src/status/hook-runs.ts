/** What `status` says of a batch's hooks (--on-complete, --on-failure): each one's latest run. */
import { plural } from '../printable.js';

/** A hook run as `status` has it (the store's record, or status --json's). */
interface HookRun {
  hook: string;
  id: string;
  runs: number;
  endedAt: unknown;
  exitCode: number | null;
  signal: string | null;
  output: string | null;
}

/**
 * Per hook, its latest run (`runs` the latest first, as hooksOf gives them): one line, and the
 * end of its output (at most `tail` lines) when it did not exit 0.
 */
export function describeHookRuns(runs: HookRun[], tail = 5): string[] {
  const latest = new Map<string, HookRun>();
  for (const r of runs) if (!latest.has(r.hook)) latest.set(r.hook, r);
  return [...latest.values()].flatMap((r) => {
    const state = r.endedAt === null ? 'running, or died' : r.exitCode === 0 ? 'exited 0' : r.signal ? `killed by ${r.signal}` : `failed: exit ${r.exitCode}`;
    const line = `--on-${r.hook} ${r.id}: ${state}${r.runs > 1 ? `, ${plural(r.runs, 'start')}` : ''}`;
    const output = r.endedAt !== null && r.exitCode !== 0 && r.output ? r.output.trimEnd().split('\n').slice(-tail).map((l) => `  ${l}`) : [];
    return [line, ...output];
  });
}
