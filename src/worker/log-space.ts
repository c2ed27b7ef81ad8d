import { statfsSync } from 'node:fs';

/**
 * Below this much free space a log folder counts as full. A command started through the
 * spawner helper writes straight into its log file, so on a full disk its own writes fail
 * (`echo` exits 1): such attempts start with Node's spawn instead, whose output goes
 * through a pipe and is kept as a tail whatever the disk says.
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
