// One simulated host, in a worker thread of its own: its own SPLITDANCE_HOST_ID (the thread's
// environment, read when its own copy of the modules loads), its own store connection, the real
// coordinator loop over a SimPool. It waits for `go`, runs until the batch is done, reports its
// claim round trips, and closes its store on `close`.
import { parentPort, workerData } from 'node:worker_threads';
import { SimPool } from './fleet-pool.mjs';

const { dist, db, batch: batchName, slots, window, group, sleepMs, leaseMs, logDir, id } = workerData;
const { openStore } = await import(`${dist}/store/open-store.js`);
const { Coordinator } = await import(`${dist}/coordinator/coordinator.js`);
const { recoverStale } = await import(`${dist}/coordinator/recovery.js`);
const { RenewalWatch } = await import(`${dist}/coordinator/renewal-watch.js`);
const { settingsOf } = await import(`${dist}/job/job-definition.js`);
const { rulesOf } = await import(`${dist}/coordinator/retry-rules.js`);
const { DeclaredOutputs } = await import(`${dist}/coordinator/declared-outputs.js`);

const store = await openStore(db, 'write');
// Client-side wall time of each claim (alone, or with the settlements it carries): the round
// trip as the coordinator waits for it, its own event-loop delays included.
const claims = [];
const TIMED = new Set(['claim', 'settleAndClaim']);
const timed = new Proxy(store, {
  get(target, prop) {
    const value = Reflect.get(target, prop, target);
    if (typeof value !== 'function') return value;
    if (!TIMED.has(prop)) return value.bind(target);
    return async (...args) => {
      const t0 = process.hrtime.bigint();
      try {
        return await value.apply(target, args);
      } finally {
        claims.push(Number(process.hrtime.bigint() - t0) / 1e3);
      }
    };
  },
});

const batch = await store.findBatch(batchName);
const settings = settingsOf(batch.job);
const pool = new SimPool(slots, sleepMs, id, window, group);
const notes = [];
const observer = { attemptEnded() {}, released() {}, note: (m) => notes.push(m) };
const coordinator = new Coordinator(
  timed,
  batch,
  pool,
  {
    rules: rulesOf(settings),
    leaseMs,
    graceMs: 5000,
    killGraceMs: 2000,
    noWait: false,
    maxFailures: null,
    maxRuntimeMs: null,
    logDir,
    pollMs: 1000,
    outputs: new DeclaredOutputs(settings, batch.name, false),
    printPrefix: null,
  },
  observer,
);
// As a run starts: a dead local owner's tasks at once; remote ones are the coordinator's watch's.
coordinator.discardLostOutputs((await recoverStale(store, batch.id, coordinator.owner, new RenewalWatch(leaseMs))).released);

parentPort.once('message', async () => {
  let stop;
  try {
    stop = (await coordinator.run()).kind;
  } catch (err) {
    stop = `error: ${err.message}`;
  }
  parentPort.postMessage({ id, stop, ran: pool.ran, claims, notes: notes.slice(0, 5), endedAt: Date.now() });
  parentPort.once('message', async () => {
    await store.close();
    process.exit(0);
  });
});
parentPort.postMessage('ready');
