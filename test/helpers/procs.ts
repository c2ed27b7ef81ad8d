import { execFileSync } from 'node:child_process';

/** Live (non-zombie) processes whose command line contains `marker`. */
export function liveProcesses(marker: string): string[] {
  let out = '';
  try {
    out = execFileSync('ps', ['-eo', 'pid=,stat=,args='], { encoding: 'utf8' });
  } catch {
    return [];
  }
  return out
    .split('\n')
    .filter((l) => l.includes(marker) && !/^\s*\d+\s+Z/.test(l) && !l.includes('ps -eo'));
}
