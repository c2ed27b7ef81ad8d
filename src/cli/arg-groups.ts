/**
 * `run`'s items given as GNU parallel's input sources: everything from the first `:::`,
 * `::::`, `:::+` or `::::+` on is groups of items, not options (as in parallel), so it is taken
 * off argv before commander parses the rest.
 */
import type { GroupMarker, RawArgGroup } from '../job/command-line-items.js';

const MARKERS: readonly string[] = [':::', '::::', ':::+', '::::+'] satisfies readonly GroupMarker[];

/** argv without the groups, and the groups (none unless the command is `run`). */
export function splitArgGroups(argv: string[]): { argv: string[]; groups: RawArgGroup[] } {
  const at = argv[2] === 'run' ? argv.findIndex((a, i) => i > 2 && MARKERS.includes(a)) : -1;
  if (at < 0) return { argv, groups: [] };
  const groups: RawArgGroup[] = [];
  for (const word of argv.slice(at)) {
    if (MARKERS.includes(word)) groups.push({ marker: word as GroupMarker, words: [] });
    else groups[groups.length - 1]!.words.push(word);
  }
  return { argv: argv.slice(0, at), groups };
}
