import picomatch from 'picomatch';

/**
 * One matcher for `--include`/`--exclude` patterns: a pattern with a `/` matches the
 * path relative to the source root; one without matches the file name at any depth
 * (`*.log`). picomatch's own `basename` option would apply the second rule to every
 * pattern, so the two kinds are compiled apart.
 */
export function globMatcher(patterns: string[], options: { dot: boolean }): ((rel: string) => boolean) | null {
  if (patterns.length === 0) return null;
  const pathPatterns = patterns.filter((p) => p.includes('/'));
  const namePatterns = patterns.filter((p) => !p.includes('/'));
  const byPath = pathPatterns.length ? picomatch(pathPatterns, { dot: options.dot }) : null;
  const byName = namePatterns.length ? picomatch(namePatterns, { dot: options.dot, basename: true }) : null;
  return (rel) => Boolean(byPath?.(rel) || byName?.(rel));
}
