/** The migrations' list: read at load by both stores, each file's SQL only when a store needs it. */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadMigrations, newestVersion } from '../../src/store/shared/migrations.js';
import { tempDir } from '../helpers/cli.js';

describe('loadMigrations', () => {
  it('lists NNN_name.sql in version order, and reads a file only when its SQL is asked for', () => {
    const dir = join(tempDir('sd-migrations-'), 'm');
    mkdirSync(dir);
    writeFileSync(join(dir, '002_second.sql'), 'CREATE TABLE b (x);');
    writeFileSync(join(dir, '001_first.sql'), 'CREATE TABLE a (x);');
    writeFileSync(join(dir, '010_tenth.sql'), 'CREATE TABLE c (x);');
    writeFileSync(join(dir, 'README'), 'not a migration');
    const migrations = loadMigrations(dir);
    expect(migrations.map((m) => [m.version, m.name])).toEqual([
      [1, '001_first.sql'],
      [2, '002_second.sql'],
      [10, '010_tenth.sql'],
    ]);
    expect(newestVersion(migrations)).toBe(10);
    // A store already at the newest version asks for no SQL: no file is read after the listing.
    rmSync(join(dir, '002_second.sql'));
    expect(migrations[0]!.sql).toBe('CREATE TABLE a (x);');
    expect(() => migrations[1]!.sql).toThrow(/ENOENT/);
    // Read once: the text is kept.
    rmSync(join(dir, '001_first.sql'));
    expect(migrations[0]!.sql).toBe('CREATE TABLE a (x);');
  });
});
