// The fleet in groups (FLEET_GROUP items per attempt, as `-n` makes them): one claim and one
// settle per group, so the server's CPU per item falls with the group's size. A row of its own,
// beside the ungrouped runs' figures at the same N.
import { atMost } from './verdict.mjs';

/** `grouped` (the runs in groups) as a row, its server CPU per item at 64 hosts (or the most) beside the ungrouped run's. */
export function groupedRow(single, grouped, cfg, server) {
  const at = (runs, n) => runs.find((r) => r.hosts === n);
  const big = at(grouped, 64) ?? grouped[grouped.length - 1];
  const alone = at(single, big.hosts);
  const broken = grouped.filter((r) => r.violations.length);
  const beside = alone ? ` (-n 1: ${alone.serverUs.toFixed(0)} µs)` : '';
  return {
    benchmark: `fleet, -n ${cfg.group}`,
    workload: `${cfg.tasks} no-op items per N, ${cfg.group} per attempt, N hosts × ${cfg.slots} slots (${server.shared ? 'shared server' : 'private cluster'})`,
    entries: grouped.map((r) => {
      const one = at(single, r.hosts);
      return { name: `${r.hosts} host${r.hosts > 1 ? 's' : ''}`, rate: r.rate, note: `server ${r.serverUs.toFixed(0)} µs/item${one ? ` (-n 1: ${one.serverUs.toFixed(0)})` : ''}, client ${r.clientUs.toFixed(0)} µs/item` };
    }),
    ratio: alone ? `server CPU per item at ${big.hosts} hosts: ${(alone.serverUs / big.serverUs).toFixed(1)}× less than -n 1` : undefined,
    goals: [
      atMost(`server CPU ≤ 100 µs per item at ${big.hosts} hosts`, big.serverUs, 100, `${big.serverUs.toFixed(0)} µs${beside}`),
      atMost('every item ran exactly once at every N', broken.length, 0, broken.length ? broken.map((r) => `${r.hosts}: ${r.violations.join(', ')}`).join('; ') : 'yes'),
    ],
  };
}
