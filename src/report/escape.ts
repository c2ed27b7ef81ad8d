import { printable } from '../printable.js';

/** Text for HTML and SVG: control and bidi characters (from hostile file names) made visible, markup escaped. */
export function esc(value: unknown): string {
  return printable(String(value ?? ''), { lines: true })
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}
