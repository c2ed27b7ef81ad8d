/** Many items per attempt (SPEC §10), as the pool knows it: each stage's bound, and how a claim shapes its groups. */
import type { HandlerSpec } from '../worker/protocol.js';

/** What the tick and the attempts in flight ask the pool about groups. */
export interface PoolGroups {
  /** At most how many items of a stage one attempt runs (`-n`, a handler's `batch`): 1 without groups. */
  maxItems(stage: string): number;
  /** Whether a failed group of a stage is split to find the items that fail on their own: not under `-N`, whose {1}…{N} name places. */
  splits(stage: string): boolean;
  /**
   * How many tasks a free place claims (at most how many items any attempt runs; 1 without
   * groups), and whether a claim deals them round the places (`-X`, `-m`, a `batch`: the last
   * of a batch spread over every worker) or fills each place in turn (`-n`, `-N`: every group
   * full but the last, as GNU parallel makes them).
   */
  claimShape(): { perPlace: number; dealt: boolean };
}

/** The pool's groups: each stage's bound as its workers' handlers said it when ready (the `ready` message). */
export class GroupBounds implements PoolGroups {
  private bounds: Readonly<Record<string, number>> = {};

  constructor(private readonly handlers: Record<string, HandlerSpec>) {}

  /** A worker is ready and said its bounds (every worker loads the same handlers). */
  heard(maxItems: Record<string, number> | undefined): void {
    if (maxItems) this.bounds = maxItems;
  }

  maxItems(stage: string): number {
    return this.bounds[stage] ?? 1;
  }

  splits(stage: string): boolean {
    const h = this.handlers[stage];
    return h?.kind !== 'exec' || h.group?.mode !== 'N';
  }

  claimShape(): { perPlace: number; dealt: boolean } {
    const perPlace = Math.max(1, ...Object.values(this.bounds));
    const dealt = Object.values(this.handlers).some((h) => (h.kind === 'module' ? perPlace > 1 : h.group?.mode === 'X' || h.group?.mode === 'm'));
    return { perPlace, dealt };
  }
}
