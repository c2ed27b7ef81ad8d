// What the rate tests count: attempt starts in a sliding window.

/** The most starts in any window of `windowMs`. */
export function mostIn(starts: number[], windowMs: number): number {
  const s = [...starts].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < s.length; i++) {
    while (j < s.length && s[j]! - s[i]! < windowMs) j++;
    most = Math.max(most, j - i);
  }
  return most;
}
