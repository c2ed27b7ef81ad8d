import bytes from 'bytes';
import { formatMs } from '../job/units.js';
import { printable } from '../printable.js';

export { hasUnsafe, plural, printable } from '../printable.js';

export const iso = (ms: number | null | undefined): string | null => (ms === null || ms === undefined ? null : new Date(ms).toISOString());

/**
 * A size for a person, in the one style every command prints: `bytes`' units (multiples of
 * 1024, as sizes are parsed: `64MB` = `64MiB`), e.g. `332 KB`, `1.5 GB`, `12 B`.
 */
export const size = (n: number): string => bytes(n, { unitSeparator: ' ' }) ?? `${n} B`;

export const duration = (ms: number | null | undefined): string => (ms === null || ms === undefined ? '-' : formatMs(ms));

/** One-line text for a table cell: printable, and cut at `max` characters. */
export function cell(text: string | null | undefined, max = 120): string {
  if (!text) return '';
  const visible = printable(text);
  return visible.length > max ? `${visible.slice(0, max - 1)}…` : visible;
}

/** Aligned columns for a terminal. */
export function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => [...(r[i] ?? '')].length))) ?? [];
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')).join('\n');
}
