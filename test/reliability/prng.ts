/** A seeded PRNG (mulberry32): the same seed gives the same faults, so a failure can be replayed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const LONG = process.env.SPLITDANCE_LONG === '1';

/** The seed for a test: SPLITDANCE_SEED replays one; otherwise a fixed default keeps CI deterministic. */
export function seedFor(fallback: number): number {
  return process.env.SPLITDANCE_SEED ? Number(process.env.SPLITDANCE_SEED) : fallback;
}
