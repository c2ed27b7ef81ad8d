import { join } from 'node:path';
import { readFileSync, readdirSync } from 'node:fs';

/** One schema step: `NNN_name.sql` in a store's migrations folder. */
export interface Migration {
  version: number;
  name: string;
  /** Its SQL, read from the file when first asked for: a store at the newest version needs none. */
  readonly sql: string;
}

/** The migrations in `dir`, in version order (both stores list theirs once, at load). */
export function loadMigrations(dir: string): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d+_.*\.sql$/.test(f))
    .sort()
    .map((f) => {
      let sql: string | undefined;
      return {
        version: Number(f.slice(0, f.indexOf('_'))),
        name: f,
        get sql() {
          return (sql ??= readFileSync(join(dir, f), 'utf8'));
        },
      };
    });
}

/** The newest schema version a build understands. */
export function newestVersion(migrations: Migration[]): number {
  return Math.max(...migrations.map((m) => m.version));
}
