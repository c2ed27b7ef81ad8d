import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, tempDir } from '../helpers/cli.js';
import { missing } from '../helpers/services.js';

/**
 * The alert rules of docs/monitoring.md are a promise too: promtool checks them and runs them
 * against series shaped like `splitdance metrics` output — a night that ended with failures
 * fires, a clean night does not, and a batch stuck for hours fires the stall alert.
 */
const hasPromtool = !missing('promtool', 'the alert-rule checks');

function documentedRules(): string {
  const page = readFileSync(join(ROOT, 'docs/monitoring.md'), 'utf8');
  const block = /```yaml\n([\s\S]*?)```/.exec(page);
  if (!block) throw new Error('no yaml block in docs/monitoring.md');
  return block[1]!;
}

const TESTS = `rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'splitdance_batch_done{batch="failed-night"}'
        values: '1x200'
      - series: 'splitdance_tasks{batch="failed-night",status="FAILED"}'
        values: '3x200'
      - series: 'splitdance_batch_last_update_timestamp_seconds{batch="failed-night"}'
        values: '0x200'
      - series: 'splitdance_batch_done{batch="clean-night"}'
        values: '1x200'
      - series: 'splitdance_tasks{batch="clean-night",status="FAILED"}'
        values: '0x200'
      - series: 'splitdance_batch_last_update_timestamp_seconds{batch="clean-night"}'
        values: '0x200'
      - series: 'splitdance_batch_done{batch="stuck"}'
        values: '0x200'
      - series: 'splitdance_tasks{batch="stuck",status="FAILED"}'
        values: '0x200'
      - series: 'splitdance_batch_last_update_timestamp_seconds{batch="stuck"}'
        values: '0x200'
    alert_rule_test:
      - eval_time: 30m
        alertname: SplitdanceNightFailed
        exp_alerts:
          - exp_labels: { batch: failed-night }
            exp_annotations: { summary: 'batch failed-night ended with failed tasks: splitdance status --batch ...' }
      - eval_time: 1h
        alertname: SplitdanceStalled
        exp_alerts: []
      - eval_time: 3h
        alertname: SplitdanceStalled
        exp_alerts:
          - exp_labels: { batch: stuck }
            exp_annotations: { summary: 'batch stuck has not moved for 2 hours' }
`;

describe.skipIf(!hasPromtool)("the documented alert rules", () => {
  it('pass promtool check rules, and fire for a failed night and a stalled batch only', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'rules.yml'), documentedRules());
    writeFileSync(join(dir, 'tests.yml'), TESTS);
    expect(execFileSync('promtool', ['check', 'rules', 'rules.yml'], { cwd: dir, encoding: 'utf8' })).toContain('SUCCESS: 2 rules found');
    const r = spawnSync('promtool', ['test', 'rules', 'tests.yml'], { cwd: dir, encoding: 'utf8' });
    expect(r.status, r.stdout + r.stderr).toBe(0);
  });
});
