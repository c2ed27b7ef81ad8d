import { describe, expect, it } from 'vitest';
import { settingsOf, type JobDefinition } from '../../src/job/job-definition.js';

describe('a definition stored by an older version', () => {
  const old = (over: Record<string, unknown>) => ({ version: 1, source: '/data', split: { include: [], exclude: [], chunkSize: 1, lines: null }, handler: null, ...over }) as unknown as JobDefinition;

  it('gets the busy code 75, the key order and no priorities', () => {
    expect(settingsOf(old({ permanentCodes: [2] }))).toMatchObject({ busyCodes: [75], maxBusyMs: 3_600_000, order: 'key', priority: [] });
  });

  it('keeps 75 a permanent failure where the batch (or one of its stages) made it one', () => {
    expect(settingsOf(old({ permanentCodes: [75] })).busyCodes).toEqual([]);
    expect(settingsOf(old({ permanentCodes: [], stages: [{ name: 's', needs: [], handler: { kind: 'exec', template: 'x' }, permanentCodes: [75] }] })).busyCodes).toEqual([]);
  });
});
