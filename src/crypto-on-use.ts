import { createRequire } from 'node:module';
import type * as Crypto from 'node:crypto';

/**
 * node:crypto, loaded when first used rather than when a module that may use it loads: the
 * module pulls in a score of Node's internal modules (about 3.5 ms of a `status`, which
 * hashes nothing unless a batch has failures; docs/benchmarks.md, "Start-up"). Node 20 has
 * no lazy built-in import for ES modules, so this requires it.
 */
const requireBuiltin = createRequire(import.meta.url);
let crypto: typeof Crypto | undefined;
const loaded = (): typeof Crypto => (crypto ??= requireBuiltin('node:crypto') as typeof Crypto);

export const createHash = (algorithm: string): Crypto.Hash => loaded().createHash(algorithm);
export const randomBytes = (size: number): Buffer => loaded().randomBytes(size);
