/**
 * The error both stores record on an attempt taken back from its owner (LOST): the task is
 * released because its coordinator is known dead, or because its lease ran out unrenewed.
 */
export function lostError(owner: string | null, deadOwners: readonly string[]): string {
  return owner !== null && deadOwners.includes(owner)
    ? `LOST: its coordinator (${owner}) died while the attempt ran`
    : `LOST: the lease of ${owner ?? 'an unknown owner'} expired without a heartbeat`;
}
