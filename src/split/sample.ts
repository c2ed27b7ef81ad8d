import { createHash } from '../crypto-on-use.js';
import { UsageError } from '../errors.js';
import type { TaskSpec } from '../store/task-store.js';

export type Sample = { kind: 'fraction'; fraction: number } | { kind: 'count'; count: number };

/** `--sample 10%`, `--sample 0.1` (a fraction) or `--sample 50` (that many tasks). */
export function parseSample(value: string): Sample {
  const text = value.trim();
  const pct = /^(\d+(?:\.\d+)?)%$/.exec(text);
  const n = Number(pct ? Number(pct[1]) / 100 : text);
  if (text === '' || !Number.isFinite(n) || n <= 0 || (!pct && n >= 1 && !Number.isInteger(n)) || (pct && n > 1)) {
    throw new UsageError(`--sample expects a fraction (0.1 or 10%) or a number of tasks (50); got "${value}"`);
  }
  return n < 1 || pct ? { kind: 'fraction', fraction: n } : { kind: 'count', count: n };
}

/** A key's place in the sample order: stable across runs and machines. */
function keyHash(key: string): number {
  return createHash('sha1').update(key).digest().readUInt32BE(0);
}

/**
 * The deterministic sample of a source: the keys whose hash falls below the fraction, or
 * the `count` keys with the smallest hashes (found in a first pass that keeps only them).
 * The same source gives the same keys every time.
 */
export function sampled(split: () => Iterable<TaskSpec>, sample: Sample): Iterable<TaskSpec> {
  if (sample.kind === 'fraction') {
    const limit = sample.fraction * 2 ** 32;
    return (function* () {
      for (const spec of split()) if (keyHash(spec.key) < limit) yield spec;
    })();
  }
  const chosen = smallestHashes(split(), sample.count);
  return (function* () {
    for (const spec of split()) if (chosen.has(spec.key)) yield spec;
  })();
}

function smallestHashes(specs: Iterable<TaskSpec>, count: number): Set<string> {
  // A bounded max-heap of [hash, key]: memory stays O(count) however big the source.
  const heap: [number, string][] = [];
  const less = (a: [number, string], b: [number, string]) => a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);
  const swap = (i: number, j: number) => ([heap[i], heap[j]] = [heap[j]!, heap[i]!]);
  for (const spec of specs) {
    const item: [number, string] = [keyHash(spec.key), spec.key];
    if (heap.length < count) {
      heap.push(item);
      for (let i = heap.length - 1; i > 0 && less(heap[(i - 1) >> 1]!, heap[i]!); i = (i - 1) >> 1) swap(i, (i - 1) >> 1);
    } else if (less(item, heap[0]!)) {
      heap[0] = item;
      for (let i = 0; ; ) {
        const l = 2 * i + 1;
        const r = l + 1;
        let big = i;
        if (l < heap.length && less(heap[big]!, heap[l]!)) big = l;
        if (r < heap.length && less(heap[big]!, heap[r]!)) big = r;
        if (big === i) break;
        swap(i, big);
        i = big;
      }
    }
  }
  return new Set(heap.map(([, key]) => key));
}
