/**
 * The attempt budget (1 + retries) of a batch's unfinished tasks: one number, or one per
 * stage for a batch with stages.
 */
export type Budget = number | Record<string, number>;

/** [stage, maxAttempts] pairs; stage null means every task of the batch. */
export function budgets(budget: Budget): [string | null, number][] {
  return typeof budget === 'number' ? [[null, budget]] : Object.entries(budget);
}
