import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Runs once per `vitest run`, before the test files' processes start: a folder of this run
 * that they inherit (SPLITDANCE_TEST_RUN_DIR), where services.ts marks each missing service it
 * has said, so a skip line is printed once per run rather than once per file that asks.
 */
export default function setup(): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'splitdance-test-run-'));
  process.env.SPLITDANCE_TEST_RUN_DIR = dir;
  return () => rmSync(dir, { recursive: true, force: true });
}
