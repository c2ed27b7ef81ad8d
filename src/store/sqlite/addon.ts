import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

let found: string | null | undefined;

/**
 * better-sqlite3's compiled addon where its install builds it, to pass as `nativeBinding`:
 * the driver's own search (the `bindings` package) reads a stack trace and tries a dozen
 * paths at every start, about 1 ms of each command (docs/benchmarks.md, "Start-up").
 * Undefined when the addon is elsewhere: the driver's search then finds it as before.
 */
export function sqliteAddon(): string | undefined {
  if (found === undefined) {
    let file: string | null = null;
    try {
      file = join(dirname(createRequire(import.meta.url).resolve('better-sqlite3/package.json')), 'build', 'Release', 'better_sqlite3.node');
    } catch {
      // A driver whose package.json cannot be resolved (an `exports` map, say): its own search.
    }
    found = file !== null && existsSync(file) ? file : null;
  }
  return found ?? undefined;
}
