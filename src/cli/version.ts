import { readFileSync } from 'node:fs';
import { inPackage } from '../package-root.js';

/** This package's version, from its package.json (read when asked: `--version` alone reads nothing else). */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(inPackage('package.json'), 'utf8')) as { version: string }).version;
}
