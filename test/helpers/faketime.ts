import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** libfaketime's preload library (the `faketime` package), or null when it is not installed. */
export const LIBFAKETIME = ['/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1', '/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1', '/usr/lib/faketime/libfaketime.so.1'].find(
  (p) => existsSync(p),
) ?? null;

/**
 * One process tree's own wall clock (never the system's): the environment that preloads
 * libfaketime with an offset read from a file on every call, so a test steps that tree's clock
 * while it runs (`step('-1h')`, `step('+10m')`, back with `step('+0')`). The monotonic clock is
 * left alone (FAKETIME_DONT_FAKE_MONOTONIC), as a real clock step leaves it.
 */
export function fakeClock(dir: string): { env: NodeJS.ProcessEnv; step(offset: string): void } {
  const file = join(dir, 'faketime-offset');
  writeFileSync(file, '+0\n');
  return {
    env: {
      LD_PRELOAD: LIBFAKETIME!,
      FAKETIME_TIMESTAMP_FILE: file,
      FAKETIME_NO_CACHE: '1',
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
    },
    step: (offset) => writeFileSync(file, `${offset}\n`),
  };
}
