import { placeholderAt } from '../template/placeholder.js';
import type { SourceKind } from '../split/split-source.js';

/** Placeholders that name the task's file (or a part of its path). */
const PATHLIKE = new Set(['', 'rel', 'name', 'stem', 'ext', 'dir', '.', '/', '//', '/.']);

/** The placeholders written in a template: their names (`''` for `{}`), `item.FIELD` and `inputs.PATH` as written. */
function placeholdersOf(template: string): Set<string> {
  const names = new Set<string>();
  for (let at = template.indexOf('{'); at >= 0; at = template.indexOf('{', at + 1)) {
    const p = placeholderAt(template, at);
    if (p?.name !== undefined) names.add(p.name);
    else if (p?.field !== undefined) names.add(`item.${p.field}`);
    else if (p?.input !== undefined) names.add(`inputs.${p.input}`);
  }
  return names;
}

/**
 * Templates that run but cannot be what was meant, said once at the start of the run (no
 * silent no-ops, SPEC §6): a command that names no task (GNU parallel appends `{}`;
 * splitdance runs a template as written), and a command over a chunked file that gets the
 * whole file's path for every chunk (not a file that is one chunk: its command reading the
 * whole file reads its own chunk). `what` names the template for the message (`--exec`, or the
 * stage).
 */
export function templateWarnings(template: string, kind: SourceKind | 'one-chunk file', what: string, pipe = false): string[] {
  // With --pipe the command's task is on its stdin: no placeholder is needed, and a chunk gets only its bytes.
  if (pipe) return [];
  const names = placeholdersOf(template);
  const readsEnv = /\bSPLITDANCE_[A-Z]+\b/.test(template);
  const shown = JSON.stringify(template);
  if (names.size === 0 && !readsEnv) {
    return [
      `warning: ${what} ${shown} has no placeholder and does not read $SPLITDANCE_PATH, so every task runs the same command (with nothing on stdin); ` +
        'add {} where the file goes (GNU parallel appends it; splitdance runs the command as written)',
    ];
  }
  const path = [...names].some((n) => PATHLIKE.has(n)) || /\bSPLITDANCE_PATH\b/.test(template);
  if (kind === 'file' && path && !names.has('start') && !names.has('end')) {
    return [
      `warning: ${what} ${shown} is given the whole file's path for every chunk, so each chunk's command reads the whole file; ` +
        `add --pipe to give the command only its chunk, on stdin (--pipe --exec 'wc -l'), or use the chunk's byte range {start} and {end}, e.g. --exec 'sh -c '\\''tail -c +$(($1 + 1)) "$3" | head -c $(($2 - $1)) | wc -l'\\'' _ {start} {end} {}'`,
    ];
  }
  return [];
}
