/** The exit codes of SPEC §6, defined once. */
export const EXIT = {
  OK: 0,
  FAILED: 1,
  USAGE: 2,
  INCOMPLETE: 3,
  STORE: 4,
  SIGINT: 130,
  SIGTERM: 143,
} as const;
