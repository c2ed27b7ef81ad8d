import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let root: string | undefined;

/**
 * The folder of splitdance's package.json: where its migrations, its spawner helper and its
 * worker's entry are. Found by walking up from this module, which may run from src/ (tests),
 * dist/ (the compiled modules) or one of dist/bundle/'s chunks (the CLI), each at another
 * depth, so no path here is relative to a module.
 */
function packageRoot(): string {
  if (root !== undefined) return root;
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error(`splitdance's package.json was not found above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
  return (root = dir);
}

/** A path inside the package. */
export function inPackage(...parts: string[]): string {
  return join(packageRoot(), ...parts);
}
