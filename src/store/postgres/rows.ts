export {
  stageCountsOf,
  toAttemptRow,
  toBatch,
  toClaimedTask,
  toCounts,
  toSibling,
  toTaskRow,
  type AttemptDbRow,
  type BatchDbRow,
  type CountDbRow,
  type SiblingDbRow,
  type TaskDbRow,
} from '../db-rows.js';
