import { TEST_HOOKS } from '../test-hooks.js';

/**
 * Test-only fault injection, from one env var (read in test-hooks.ts with the suite's other hooks):
 *
 * - `SPLITDANCE_FAILPOINT=write:N` SIGKILLs this process right after its N-th committed
 *   store write, the way SQLite's crash tests walk N over every write of a run.
 * - `SPLITDANCE_FAILPOINT=pages:N` caps the store at N pages (`PRAGMA max_page_count`),
 *   which makes SQLite report a full disk once the store would grow past it.
 *
 * - `SPLITDANCE_FAILPOINT=freeze:N` SIGSTOPs this process inside its N-th lease heartbeat
 *   transaction (PostgreSQL), between the statement and the COMMIT: a host frozen mid-transaction,
 *   holding the row locks of every task it runs.
 *
 * - `SPLITDANCE_FAILPOINT=hookbefore:N` / `hookafter:N` SIGKILLs this process as it is about to
 *   record its N-th batch hook (--on-complete, --on-failure) / right after recording its end.
 *
 * - `SPLITDANCE_FAILPOINT=bug:1` makes the CLI throw an internal error (a bug, not a usage
 *   or store error) inside its error boundary, to test how an unexpected error is reported.
 *
 * Unset, each call costs one comparison.
 */
const spec = /^(\w+):(\d+)$/.exec(TEST_HOOKS.failpoint ?? '');
const counts = new Map<string, number>();

export function failpoint(name: string): void {
  if (!spec || spec[1] !== name) return;
  const n = (counts.get(name) ?? 0) + 1;
  counts.set(name, n);
  if (n === Number(spec[2])) process.kill(process.pid, name === 'freeze' ? 'SIGSTOP' : 'SIGKILL');
}

/** The number given for a value-style failpoint (`pages:N`), or null. */
export function failpointValue(name: string): number | null {
  return spec && spec[1] === name ? Number(spec[2]) : null;
}

/** Throws a plain Error (what a bug looks like) when the failpoint `name` is set. */
export function failpointBug(name: string): void {
  if (spec && spec[1] === name) throw new Error(`internal error injected by SPLITDANCE_FAILPOINT=${spec[0]}`);
}
