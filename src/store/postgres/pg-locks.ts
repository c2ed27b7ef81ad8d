import { createHash } from '../../crypto-on-use.js';

/**
 * A 64-bit advisory lock key for `parts` (say the schema and a batch name), as a string
 * for a `$1::bigint` parameter. Other schemas, or other batches, hash to other keys and
 * never wait on each other.
 */
export function lockKey(...parts: string[]): string {
  return createHash('sha256').update(['splitdance', ...parts].join('\0')).digest().readBigInt64BE(0).toString();
}
