/** The exit codes of SPEC §6, defined once. */
export const EXIT = {
  OK: 0,
  FAILED: 1,
  USAGE: 2,
  INCOMPLETE: 3,
  STORE: 4,
  /** A bug in splitdance: neither bad input nor a store problem (sysexits' EX_SOFTWARE). */
  INTERNAL: 70,
  SIGINT: 130,
  SIGTERM: 143,
} as const;
