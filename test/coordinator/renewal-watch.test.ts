import { describe, expect, it } from 'vitest';
import { RenewalWatch } from '../../src/coordinator/renewal-watch.js';

// R39: an owner is judged by its renewals seen on the looker's monotonic clock, never by a
// lease end compared with a wall clock that may have stepped.
describe('RenewalWatch', () => {
  const LEASE = 3000;
  const watchAt = () => {
    let t = 1_000;
    const w = new RenewalWatch(LEASE, () => t);
    return { w, advance: (ms: number) => (t += ms) };
  };
  const owner = (name: string, leaseEnd: number) => ({ owner: name, leaseEnd, expired: true });

  it('counts an owner first seen as renewing for a whole lease, then silent', () => {
    const { w, advance } = watchAt();
    expect(w.renewing([owner('a', 10)])).toEqual(['a']);
    advance(LEASE - 1);
    expect(w.renewing([owner('a', 10)])).toEqual(['a']);
    advance(1);
    expect(w.renewing([owner('a', 10)])).toEqual([]);
  });

  it('starts the lease over each time the lease end moves, whichever way (a renewal on a stepped clock)', () => {
    const { w, advance } = watchAt();
    w.renewing([owner('a', 10)]);
    for (const end of [20, 3_600_020, 30, 40]) {
      advance(LEASE - 1);
      expect(w.renewing([owner('a', end)])).toEqual(['a']);
    }
    advance(LEASE);
    expect(w.renewing([owner('a', 40)])).toEqual([]);
  });

  it('judges each owner on its own, and forgets one that no longer holds tasks', () => {
    const { w, advance } = watchAt();
    w.renewing([owner('a', 1), owner('b', 1)]);
    advance(LEASE);
    expect(w.renewing([owner('a', 1), owner('b', 2)])).toEqual(['b']);
    expect(w.renewing([owner('b', 2)])).toEqual(['b']);
    // 'a' comes back with the same lease end: seen anew, so renewing for a lease again.
    expect(w.renewing([owner('a', 1), owner('b', 2)])).toEqual(['a', 'b']);
  });
});
