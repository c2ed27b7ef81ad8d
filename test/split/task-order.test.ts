import { describe, expect, it } from 'vitest';
import { parseOrder, parsePriority, rankSpecs, sizeOf, type OrderPlan } from '../../src/split/task-order.js';
import { durationKey, type TaskSpec } from '../../src/store/task-spec.js';

const file = (key: string, size: number): TaskSpec => ({ key, payload: { version: 1, path: `/src/${key}`, rel: key }, fingerprint: `${size}:1700000000000` });
const plan = (p: Partial<OrderPlan>): OrderPlan => ({ order: 'key', priority: [], seed: 'batch', ...p });
/** The keys in the order the claim takes them: priority down, rank up, then as given (key order). */
const claimOrder = (specs: TaskSpec[], p: OrderPlan) =>
  [...rankSpecs(specs, p)].map((s, i) => ({ s, i })).sort((a, b) => (b.s.priority ?? 0) - (a.s.priority ?? 0) || (a.s.rank ?? 0) - (b.s.rank ?? 0) || a.i - b.i).map((x) => x.s.key);

describe('the claim order of never-tried tasks (--order, --priority)', () => {
  const specs = [file('a', 10), file('b', 5000), file('c', 0), file('d', 300)];

  it('key: the specs as they are, unranked', () => {
    const out = [...rankSpecs(specs, plan({}))];
    expect(out).toEqual(specs);
  });

  it('size: the biggest input first; a chunk by its range, an item by its bytes', () => {
    expect(claimOrder(specs, plan({ order: 'size' }))).toEqual(['b', 'd', 'a', 'c']);
    expect(sizeOf({ key: 'x', payload: { version: 1, path: '/f', rel: 'f', start: 100, end: 350 }, fingerprint: '9999:1' })).toBe(250);
    expect(sizeOf({ key: 'é', payload: { version: 1, path: 'l', rel: 'l', item: 'éé' }, fingerprint: null })).toBe(4);
  });

  it('history: known keys first, slowest first; unknown ones after them, biggest first', () => {
    const learned = new Map([
      [durationKey('', 'c'), 900],
      [durationKey('', 'a'), 50],
    ]);
    expect(claimOrder(specs, plan({ order: 'history', learned }))).toEqual(['c', 'a', 'b', 'd']);
    // A stage task's duration is learned under its stage.
    const staged: TaskSpec = { ...file('s/x', 1), stage: 's', item: 'x' };
    const [r] = [...rankSpecs([staged], plan({ order: 'history', learned: new Map([[durationKey('s', 's/x'), 7]]) }))];
    expect(r!.rank).toBeLessThan(-(2 ** 49));
  });

  it('random: a fixed shuffle per batch name, a different one for another', () => {
    const many = Array.from({ length: 200 }, (_, i) => file(`k${String(i).padStart(3, '0')}`, 1));
    const one = claimOrder(many, plan({ order: 'random', seed: 'nightly' }));
    expect(claimOrder(many, plan({ order: 'random', seed: 'nightly' }))).toEqual(one);
    expect(one).not.toEqual(many.map((s) => s.key));
    expect(claimOrder(many, plan({ order: 'random', seed: 'other' }))).not.toEqual(one);
    expect([...one].sort()).toEqual(many.map((s) => s.key));
  });

  it('priority: matching keys ahead of the order, higher N first, the first glob that matches counts; a stage task by its item too', () => {
    const priority = [parsePriority('d=5', '--priority'), parsePriority('{a,d}=9', '--priority'), parsePriority('c=-1', '--priority')];
    // d takes 5 (its first match), not 9; c goes behind every 0.
    expect(claimOrder(specs, plan({ order: 'size', priority }))).toEqual(['a', 'd', 'b', 'c']);
    const staged: TaskSpec = { ...file('thumb/big.mov', 1), stage: 'thumb', item: 'big.mov' };
    expect([...rankSpecs([staged], plan({ priority: [parsePriority('*.mov=3', '--priority')] }))][0]!.priority).toBe(3);
  });

  it('bad values name the option, what it expects, and what arrived', () => {
    expect(() => parseOrder('biggest', '--order')).toThrow('--order expects one of key, size, history, random (biggest input first is size); got "biggest"');
    for (const bad of ['big', '=3', 'big=', 'big=x', 'big=1.5', 'big=2000000000']) {
      expect(() => parsePriority(bad, '--priority'), bad).toThrow(/^--priority expects GLOB=N, a key glob and a whole number of at most ±1,000,000,000/);
    }
    expect(parsePriority('a=b=-7', '--priority')).toEqual({ glob: 'a=b', n: -7 });
  });
});
