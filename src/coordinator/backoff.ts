export interface BackoffPolicy {
  /** Delay before the first retry, ms. */
  backoffMs: number;
  factor: number;
  maxBackoffMs: number;
  /** ± this share of the delay, 0 for none. */
  jitter: number;
}

/**
 * Delay before retry `k` (1 for the first retry): backoff × factor^(k-1), capped at
 * maxBackoff, then spread by ±jitter. `random` is injected so tests can pin it.
 */
export function backoffDelay(k: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  // factor^(k-1) overflows to Infinity by retry ~440 (factor 5), and 0 × Infinity is NaN: a
  // NaN retry time ended `--retries 1000 --backoff 0s` FAILED after 443 attempts.
  const growth = Math.pow(policy.factor, Math.max(0, k - 1));
  const raw = policy.backoffMs === 0 ? 0 : policy.backoffMs * growth;
  const capped = Math.min(raw, policy.maxBackoffMs);
  const spread = capped * policy.jitter * (2 * random() - 1);
  return Math.max(0, Math.round(capped + spread));
}
