import { describe, expect, it } from 'vitest';
import { renderRateKey } from '../../src/template/rate-key.js';
import type { TemplateTask } from '../../src/template/template-task.js';

/** A list's item as the enqueue renders its key: no attempt, no slot, no inputs. */
const item = (text: string, extra: Partial<TemplateTask['payload']> = {}): TemplateTask => ({
  key: text,
  batch: 'b',
  stage: '',
  seq: 0,
  attempt: 0,
  payload: { version: 1, path: '/l', rel: text, item: text, ...extra },
  inputs: {},
});

describe('--rate-key rendering', () => {
  it('the template with each value, text around it kept; a field a record lacks, or an item not UTF-8, gives null', () => {
    expect(renderRateKey('{1}', item('api.example.com /x'))).toBe('api.example.com');
    expect(renderRateKey('tenant-{item.t}', item('{"t":7}', { record: { t: 7 } }))).toBe('tenant-7');
    expect(renderRateKey('{item.t}', item('{"u":1}', { record: { u: 1 } }))).toBeNull();
    expect(renderRateKey('{}', item('x', { bytes: 'eA==' }))).toBeNull();
    expect(renderRateKey('{batch}/{key}', item('k'))).toBe('b/k');
  });

  it('a key above 256 characters: its first 200 and a hash of the whole, so two that differ only at the end stay apart', () => {
    const head = 'h'.repeat(300);
    const a = renderRateKey('{}', item(`${head}a`))!;
    const b = renderRateKey('{}', item(`${head}b`))!;
    expect(a.startsWith('h'.repeat(200))).toBe(true);
    expect(a.length).toBeLessThanOrEqual(256);
    expect(a).not.toBe(b);
    expect(renderRateKey('{}', item('h'.repeat(256)))).toBe('h'.repeat(256));
  });
});
