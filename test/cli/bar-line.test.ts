import { describe, expect, it } from 'vitest';
import { barLine, type BarFacts } from '../../src/cli/bar-line.js';

// SPEC §7: the bar shows done/total, rate, ETA, running, queued, retrying and failed. Issue 41:
// at 80 columns all of it fits, bar included, for a batch of a few hundred tasks; on narrower
// terminals parts are shortened, then dropped, least useful first; never wider than the terminal.

const small: BarFacts = { done: 120, total: 401, rate: '31.2', eta: '9s', running: 2, queued: 2, retrying: 0, failed: 0 };
const big: BarFacts = { done: 123456, total: 1000000, rate: '1234.5', eta: '1h 40m', running: 64, queued: 64, retrying: 1234, failed: 56789 };

describe('barLine', () => {
  it('is shorter than the terminal at every width, whatever the numbers', () => {
    for (const f of [small, big]) {
      for (let columns = 5; columns <= 200; columns++) expect(barLine(f, columns).length, `${columns}`).toBeLessThan(columns);
    }
  });

  it('at 80 columns: a bar and every count, for a batch of a few hundred tasks', () => {
    expect(barLine(small, 80)).toMatch(/^[█░]{10,} 120\/401 · 31\.2\/s · ETA 9s · 2 run · 2 queue · 0 retry · 0 fail$/);
    expect(barLine(small, 120)).toMatch(/^[█░]{30} 120\/401 · 31\.2\/s · ETA 9s · 2 running · 2 queued · 0 retrying · 0 failed$/);
  });

  it('at 80 columns with a million tasks: every count still, the bar and the rate given up for them', () => {
    expect(barLine(big, 80)).toBe('123456/1000000 · ETA 1h 40m · 64 run · 64 queue · 1234 retry · 56789 fail');
  });

  it('narrower: the counts that are 0 go, then the rate, the ETA, running; done/total and failed stay longest', () => {
    expect(barLine(small, 50)).toBe('120/401 · ETA 9s · 2 run · 2 queue · 0 fail');
    expect(barLine(small, 30)).toBe('120/401 · 2 run · 0 fail');
    expect(barLine(small, 20)).toBe('120/401 · 0 fail');
    expect(barLine(small, 10)).toBe('120/401');
  });
});
