/** The API for handler authors: `import { PermanentError, type Handler } from 'splitdance'`. */
export { PermanentError, RetryLater } from './errors.js';
export type { Handler, Task, TaskContext } from './worker/handler-types.js';
