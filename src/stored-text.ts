/**
 * How much of a handler's text the store keeps. Errors, results and output tails come from
 * handlers, so from data: unbounded, they made a 150 MB store of five tasks' errors and a
 * 2.8 GB coordinator of one result. The limits are documented in docs/bounds-and-streams.md.
 */

/** An attempt's error (and a task's last error): its first 4 KiB, the message before the stack. */
export const ERROR_MAX_BYTES = 4096;

/** A module handler's result, as JSON text: above this the attempt fails for good (a file holds big data). */
export const RESULT_MAX_BYTES = 1024 * 1024;

/** The text's first `max` bytes of UTF-8, cut on a character boundary, saying how much was cut. */
export function cutText(text: string, max: number): string {
  // Most texts are short: a string of n UTF-16 units has at most 3n bytes.
  if (text.length * 3 <= max) return text;
  const bytes = Buffer.byteLength(text);
  if (bytes <= max) return text;
  const room = max - 48; // the note: ` … (N bytes more, not kept)`
  // A multi-byte character cut in half decodes to U+FFFD: drop it.
  const head = Buffer.from(text.slice(0, room)).subarray(0, room).toString('utf8').replace(/\uFFFD$/, '');
  return `${head} … (${bytes - Buffer.byteLength(head)} bytes more, not kept)`;
}

export const cutError = (text: string): string => cutText(text, ERROR_MAX_BYTES);

/** `1 MiB`, `300.0 MiB`, `512 bytes`: for messages about these limits. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} bytes`;
  if (n < 1024 * 1024) return `${+(n / 1024).toFixed(1)} KiB`;
  return `${+(n / 1024 / 1024).toFixed(1)} MiB`;
}
