import { spawnSync } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { LIBFAKETIME } from './faketime.js';

/**
 * What some tests need beyond Node and the build, and how to get it. A test that needs one is
 * skipped without it, and its file says so in one line, so `npm test` passes on a fresh clone
 * and nobody mistakes a skip for a pass. `.ci/run` installs and starts all of them.
 */
const HOW = {
  postgres: 'set SPLITDANCE_PG_URL (`source .ci/start-postgres.sh` starts a loopback server and sets it)',
  chromium: "install Chromium (Debian: apt-get install chromium), or name it in SPLITDANCE_CHROMIUM",
  promtool: 'install promtool (Debian: apt-get install prometheus)',
  parallel: 'install GNU parallel (apt-get install parallel)',
  strace: 'install strace (apt-get install strace)',
  faketime: 'install libfaketime (Debian: apt-get install faketime)',
  root: 'run the tests as root (they mount a tmpfs or a read-only bind mount)',
  cc: 'install a C compiler (Debian: apt-get install build-essential), then npm run build',
  zsh: 'install zsh (apt-get install zsh)',
  fish: 'install fish (apt-get install fish)',
  man: 'install man (apt-get install man-db)',
} as const;

export type Service = keyof typeof HOW;

/** Whether a program answers `--version` (or `-V`), found on PATH. */
function hasProgram(name: string, flag = '--version'): boolean {
  return spawnSync(name, [flag], { stdio: 'ignore' }).status === 0;
}

/** The Chromium to drive: SPLITDANCE_CHROMIUM, else the first `chromium` on PATH. */
export function chromiumPath(): string | null {
  if (process.env.SPLITDANCE_CHROMIUM) return process.env.SPLITDANCE_CHROMIUM;
  const found = spawnSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' });
  return found.status === 0 && found.stdout.trim() ? found.stdout.trim() : null;
}

function present(service: Service): boolean {
  switch (service) {
    case 'postgres':
      return !!process.env.SPLITDANCE_PG_URL;
    case 'chromium':
      return chromiumPath() !== null;
    case 'promtool':
      return hasProgram('promtool');
    case 'parallel':
      return hasProgram('parallel');
    case 'strace':
      return hasProgram('strace', '-V');
    case 'faketime':
      return LIBFAKETIME !== null;
    case 'root':
      return process.getuid?.() === 0;
    case 'cc':
      return hasProgram(process.env.CC || 'cc');
    case 'zsh':
    case 'fish':
    case 'man':
      return hasProgram(service);
  }
}

const said = new Set<Service>();

/**
 * Whether this is the first time in the test run that `service` is found missing: a mark in the
 * run's folder (global-setup.ts), made exclusively so one file of the run wins; in this process
 * only when run without it.
 */
function firstToSay(service: Service): boolean {
  if (said.has(service)) return false;
  said.add(service);
  const runDir = process.env.SPLITDANCE_TEST_RUN_DIR;
  if (!runDir) return true;
  try {
    closeSync(openSync(join(runDir, `missing-${service}`), 'wx'));
    return true;
  } catch {
    return false;
  }
}

/**
 * True when `service` is missing. The first time a file of the run asks, it prints one line:
 * what is skipped, and how to run it.
 */
export function missing(service: Service, what = 'the tests that need it'): boolean {
  if (present(service)) return false;
  if (firstToSay(service)) console.warn(`skipping ${what}: no ${service}; to run them, ${HOW[service]}`);
  return true;
}
