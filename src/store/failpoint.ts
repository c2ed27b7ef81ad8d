/**
 * Test-only crash injection, read in this one place: SPLITDANCE_FAILPOINT=write:N
 * SIGKILLs this process right after its N-th committed store write, the way the
 * SQLite crash tests walk N over every write of a run. Unset, it costs one branch.
 */
const spec = /^(\w+):(\d+)$/.exec(process.env.SPLITDANCE_FAILPOINT ?? '');
const counts = new Map<string, number>();

export function failpoint(name: string): void {
  if (!spec || spec[1] !== name) return;
  const n = (counts.get(name) ?? 0) + 1;
  counts.set(name, n);
  if (n === Number(spec[2])) process.kill(process.pid, 'SIGKILL');
}
