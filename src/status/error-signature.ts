import { createHash } from 'node:crypto';
import type { ErrorCount } from '../store/task-store.js';

/**
 * Folds what varies between otherwise identical errors — paths, ids, numbers, quoted
 * names — so `ENOENT: no such file '/a/1.log'` and `… '/b/2.log'` count as one.
 */
export function errorSignature(error: string): string {
  return error
    .replace(/[^\s'"`:,;()]*\/[^\s'"`:,;()]+/g, '<path>')
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, '<id>')
    .replace(/\b(?=[0-9a-f]*\d)[0-9a-f]{8,}\b/gi, '<id>')
    // A quote opens only after a space or punctuation, so the apostrophe of "can't" is not one.
    .replace(/(^|[\s(=:,[{])(['"`])[^'"`\n]*\2/g, '$1$2…$2')
    .replace(/\d+(\.\d+)?/g, 'N')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 200);
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
