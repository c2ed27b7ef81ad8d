// What the attempt-group tests share: both launchers, a command that logs its start and end
// (fixtures/handlers/record.mjs's format), and the overlaps of one key's executions.
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectWithFiles } from './project.js';
import type { LogEntry } from './store.js';

/** The environment as it is (the default launcher). */
const noEnv: Record<string, string> = {};
export const modes = [
  { name: 'spawner helper', env: noEnv },
  { name: "Node's spawn", env: { SPLITDANCE_SPAWNER: 'node' } },
];

/**
 * A project with `record.sh SECONDS`: logs a `start` line, sleeps, logs an `end` line (the
 * side-effect log format of fixtures/handlers/record.mjs), keyed by the task's variables.
 */
export function recordingProject(files: number) {
  const p = projectWithFiles(files);
  const script = join(p.dir, 'record.sh');
  writeFileSync(
    script,
    [
      '#!/bin/sh',
      'now() { date +%s%3N; }',
      's=$(now)',
      `printf '{"type":"start","key":"%s","attempt":%s,"pid":%s,"at":%s}\\n' "$SPLITDANCE_KEY" "$SPLITDANCE_ATTEMPT" $$ "$s" >> "$SIDE_EFFECT_LOG"`,
      'sleep "$1"',
      `printf '{"type":"end","key":"%s","attempt":%s,"pid":%s,"start":%s,"end":%s}\\n' "$SPLITDANCE_KEY" "$SPLITDANCE_ATTEMPT" $$ "$s" "$(now)" >> "$SIDE_EFFECT_LOG"`,
      '',
    ].join('\n'),
  );
  chmodSync(script, 0o755);
  return { ...p, script, env: { SIDE_EFFECT_LOG: p.log, SD_MARK: p.dir } };
}

/**
 * Pairs of executions of one key whose [start, end] intervals overlap. An execution with
 * no `end` was killed: it counts from its start to its start (call this only once nothing
 * of the run is alive, so no `end` can still come).
 */
export function overlaps(entries: LogEntry[]): string[] {
  const runs = new Map<string, { key: string; attempt: number; start: number; end: number }>();
  for (const e of entries) {
    // One execution of a key per process, or per call of a group's (a failed group's halves run its items again in one worker).
    if (e.type === 'start') runs.set(`${e.key}:${e.pid}:${e.call ?? ''}`, { key: e.key, attempt: e.attempt, start: e.at, end: e.at });
    else if (e.type === 'end') runs.set(`${e.key}:${e.pid}:${e.call ?? ''}`, { key: e.key, attempt: e.attempt, start: e.start, end: e.end });
  }
  const all = [...runs.values()];
  const found: string[] = [];
  for (const a of all) {
    for (const b of all) {
      if (a !== b && a.key === b.key && a.start <= b.start && b.start < a.end) found.push(`${a.key}: attempt ${a.attempt} [${a.start}, ${a.end}] overlaps attempt ${b.attempt} from ${b.start}`);
    }
  }
  return found;
}
