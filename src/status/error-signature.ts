import { createHash } from '../crypto-on-use.js';
import type { ErrorCount } from '../store/task-store.js';

/**
 * Folds what varies between otherwise identical errors — paths, ids, numbers, quoted
 * names — so `ENOENT: no such file '/a/1.log'` and `… '/b/2.log'` count as one.
 */
export function errorSignature(error: string): string {
  return error
    .slice(0, SIGNATURE_READS)
    // Word by word, not `[^…]*\/[^…]+`: that pattern rescans the rest of a long word from
    // every position (a 200 KB error took 30 s); every replacement here is linear.
    .replace(/[^\s'"`:,;()]+/g, (word) => (isPathWord(word) ? '<path>' : word))
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, '<id>')
    .replace(/\b(?=[0-9a-f]*\d)[0-9a-f]{8,}\b/gi, '<id>')
    // A quote opens only after a space or punctuation, so the apostrophe of "can't" is not one.
    .replace(/(^|[\s(=:,[{])(['"`])[^'"`\n]*\2/g, '$1$2…$2')
    .replace(/\d+(\.\d+)?/g, 'N')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 200);
}

/**
 * A signature is read from the error's first 4 KiB (stored errors are cut there too: see
 * stored-text.ts), so an old store holding a 10 MB error folds it as fast as a short one.
 */
const SIGNATURE_READS = 4096;

/** A word holding a `/` with something after it, like `/a/1.log` or `dir/`…`x`. */
function isPathWord(word: string): boolean {
  const slash = word.indexOf('/');
  return slash !== -1 && slash < word.length - 1;
}

/** A short stable id for a signature, for `retry-failed --cluster ID`. */
export function clusterId(signature: string): string {
  return createHash('sha1').update(signature).digest('hex').slice(0, 6);
}

export interface ErrorCluster {
  id: string;
  signature: string;
  /** The most frequent actual error text in the cluster. */
  error: string;
  count: number;
  example: string;
}

export function clusterErrors(errors: ErrorCount[]): ErrorCluster[] {
  const clusters = new Map<string, ErrorCluster>();
  for (const e of errors) {
    const signature = errorSignature(e.error);
    const c = clusters.get(signature);
    if (c) c.count += e.count;
    else clusters.set(signature, { id: clusterId(signature), signature, error: e.error, count: e.count, example: e.example });
  }
  return [...clusters.values()].sort((a, b) => b.count - a.count);
}
