/**
 * Many items per attempt (SPEC §10: `-n`, `-X`, a handler's `batch`): how a free place's claimed
 * tasks become groups, and how a failed group is split to find the items that fail on their own.
 */
import type { ClaimedTask } from '../store/task-store.js';

/**
 * A place's tasks as groups, in claim order: tasks of one stage next to each other, each
 * group at most as big as the smallest `limit` of its tasks (its stage's `maxItems`; less for
 * a task whose group's worker died under it, and 1 for a task with a declared output, which is
 * one item's).
 */
export function formGroups(tasks: ClaimedTask[], limitOf: (task: ClaimedTask) => number): ClaimedTask[][] {
  const groups: ClaimedTask[][] = [];
  let group: ClaimedTask[] = [];
  let limit = 0;
  for (const task of tasks) {
    const own = limitOf(task);
    const fits = group.length > 0 && group[0]!.stage === task.stage && group.length < Math.min(limit, own);
    if (fits) {
      group.push(task);
      limit = Math.min(limit, own);
    } else {
      if (group.length) groups.push(group);
      group = [task];
      limit = own;
    }
  }
  if (group.length) groups.push(group);
  return groups;
}

/** A failed group's two halves (the first the bigger), each run again on its own. */
export function halves<T>(members: T[]): [T[], T[]] {
  const cut = Math.ceil(members.length / 2);
  return [members.slice(0, cut), members.slice(cut)];
}
