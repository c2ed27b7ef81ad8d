import { UsageError } from '../errors.js';

/**
 * A filter flag (`--key`, `--error`, `--cluster`) as given, refusing an empty one: a script
 * whose variable is unset passes `--key ''`, and "no filter" would then act on every task.
 * Leaving the flag out is how to mean every task.
 */
export function requireFilter(value: string | undefined, flag: string): string | undefined {
  if (value !== undefined && value.trim() === '') {
    throw new UsageError(`${flag} is empty; give a non-empty value (is a shell variable unset?), or leave ${flag} out to mean every task`);
  }
  return value;
}
