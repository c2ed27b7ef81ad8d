/** A task's status and an attempt's outcome: the two words every record and verb of the store uses. */
export const TASK_STATUSES = ['PENDING', 'RUNNING', 'SUCCESS', 'FAILED', 'CANCELLED'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export const OUTCOMES = ['SUCCESS', 'FAILED', 'TIMEOUT', 'CRASHED', 'LOST', 'INTERRUPTED', 'BUSY'] as const;
export type Outcome = (typeof OUTCOMES)[number];
