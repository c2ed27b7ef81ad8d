import { statfsSync } from 'node:fs';

/**
 * Below this much free space a log folder counts as full. A command started through the
 * spawner helper writes straight into its log file, so on a full disk its own writes would
 * fail (`echo` exits 1): such attempts get an empty log path instead, the helper sends their
 * output to /dev/null, and the attempt's note says no output was kept and why
 * (helper-launcher.ts). One that fails after the disk filled while it ran says that may be why.
 */
const LOW_SPACE_BYTES = 1 << 20;

/** Whether the file system of `dir` is (nearly) full; false when that cannot be told. */
export function logSpaceLow(dir: string): boolean {
  try {
    const s = statfsSync(dir);
    return s.bavail * s.bsize < LOW_SPACE_BYTES;
  } catch {
    return false;
  }
}
