import { formatBytes } from '../stored-text.js';

/**
 * Linux's limit on one argument or one `NAME=value` of the environment (MAX_ARG_STRLEN,
 * 32 pages of 4 KiB, its terminating NUL included). The total of all of them is bounded
 * too (ARG_MAX: a quarter of the stack limit, 2 MiB by default).
 */
const MAX_ARG_BYTES = 128 * 1024;

/**
 * Why exec refused a command with E2BIG, naming what is too long: the first argument (or
 * variable) over the per-argument limit, else the total. `argv` is the command as tried
 * first; `fallback` its shell line (argument 2 of `/bin/sh -c`), tried when argv[0] could
 * not be executed; `vars` what the attempt sets over `env`.
 */
export function describeE2big(argv: string[], fallback: string | null, vars: Record<string, string>, env: NodeJS.ProcessEnv = process.env): string {
  const tried = [argv, ...(fallback === null ? [] : [['/bin/sh', '-c', fallback]])];
  for (const words of tried) {
    const i = words.findIndex((w) => Buffer.byteLength(w) + 1 > MAX_ARG_BYTES);
    if (i >= 0) return `argument ${i} is ${formatBytes(Buffer.byteLength(words[i]!))}, over the 128 KiB per-argument limit of the system (E2BIG); pass big values in a file or on stdin (--pipe)`;
  }
  const all: Record<string, string | undefined> = { ...env, ...vars };
  const name = Object.keys(all).find((k) => Buffer.byteLength(`${k}=${all[k] ?? ''}`) + 1 > MAX_ARG_BYTES);
  if (name !== undefined) return `environment variable ${name} is ${formatBytes(Buffer.byteLength(all[name] ?? ''))}, over the 128 KiB per-variable limit of the system (E2BIG)`;
  const bytes = (ws: string[]) => ws.reduce((n, w) => n + Buffer.byteLength(w) + 1, 0);
  const total = bytes(argv) + bytes(Object.entries(all).map(([k, v]) => `${k}=${v ?? ''}`));
  return `its arguments and environment are ${formatBytes(total)} together, over the system's limit (ARG_MAX, E2BIG); pass big values in a file or on stdin (--pipe)`;
}
