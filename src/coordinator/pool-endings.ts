/** Pool events as the tick takes them: attempts that ended (as Endings), queued attempts that started, a wake-up, a note. */
import type { PoolEvents } from '../pool/pool.js';
import type { AttemptStart } from '../store/task-store.js';
import type { AttemptsInFlight } from './attempts-in-flight.js';
import type { Ending } from './settlement.js';

/** What a pool event means to the tick, in the order it happened. */
export type PoolNews =
  /** An attempt (or a group's command) ended: its settlements are decided and queued for the next commit. */
  | { kind: 'ended'; token: number; ending: Ending }
  /** Attempts started that the store has as queued and must be told of. */
  | { kind: 'started'; starts: AttemptStart[] }
  /** Something changed that a tick should look at (a worker ready, one gone). */
  | { kind: 'wake' }
  | { kind: 'note'; message: string };

/**
 * The pool's events (pool-events.ts), turned into news for the tick. Signs of life (heartbeat,
 * `ran`) and the clocks of attempts starting go to the attempts in flight directly; `stopping`
 * says whether the run is stopping (queued attempts given back then were taken back for it).
 */
export function poolEndings(attempts: AttemptsInFlight, stopping: () => boolean, take: (news: PoolNews) => void): PoolEvents {
  const ended = (token: number, ending: Ending) => take({ kind: 'ended', token, ending });
  const started = (starts: AttemptStart[]) => {
    if (starts.length) take({ kind: 'started', starts });
  };
  return {
    done: (worker, msg) => {
      ended(msg.token, { kind: 'reported', msg, timedOut: false });
      started(attempts.startHead(worker, true));
    },
    dropped: (_worker, tokens, why) => {
      for (const t of tokens) ended(t, { kind: 'interrupted', why: stopping() ? `taken back unstarted as the run stopped` : why });
    },
    exited: (_worker, running, why, queued, signal) => {
      // An idle worker the OOM killer took: its kill is no attempt's.
      if (running.length === 0 && signal === 'SIGKILL') attempts.oomKills.claim();
      for (const t of queued) ended(t, { kind: 'interrupted', why: `its worker died (${why}) before it started` });
      for (const t of running) ended(t, { kind: 'died', why, timedOut: false, signal });
      take({ kind: 'wake' });
    },
    started: (_worker, token) => started(attempts.started(token)),
    idle: () => take({ kind: 'wake' }),
    // Leases are extended for every running attempt on a timer; a heartbeat is a sign of life.
    heartbeat: (token) => attempts.heartbeat(token),
    ran: (token) => attempts.ran(token),
    shrunk: (why) => take({ kind: 'note', message: why }),
  };
}
