import { describe } from 'vitest';
import { useStore, type MakeStore } from './contract/harness.js';
import { enqueueContract } from './contract/enqueue.js';
import { claimContract } from './contract/lease-claim.js';
import { settleContract } from './contract/lease-settle.js';
import { listContract } from './contract/list.js';
import { adminContract } from './contract/admin.js';
import { stagesContract } from './contract/stages.js';
import { attemptStatsContract } from './contract/attempt-stats.js';
import { itemsContract } from './contract/items.js';
import { queuedContract } from './contract/queued.js';
import { groupsContract } from './contract/groups.js';
import { orderContract } from './contract/order.js';
import { busyContract, rateContract } from './contract/busy.js';
import { hooksContract } from './contract/hooks.js';

export { ending, keys, newBatch, spec, type MakeStore } from './contract/harness.js';

/**
 * The TaskStore contract: every backend runs it (sqlite.test.ts, postgres.test.ts), one part
 * per verb group in contract/, on a fresh store per test.
 */
export function describeTaskStore(name: string, makeStore: MakeStore): void {
  describe(`TaskStore contract: ${name}`, () => {
    const h = useStore(makeStore);
    enqueueContract(h);
    claimContract(h);
    settleContract(h);
    listContract(h);
    adminContract(h);
    stagesContract(h);
    attemptStatsContract(h);
    itemsContract(h);
    queuedContract(h);
    groupsContract(h);
    orderContract(h);
    busyContract(h);
    rateContract(h);
    hooksContract(h);
  });
}
