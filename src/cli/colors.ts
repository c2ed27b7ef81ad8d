/** Colours for human text, decided once per stream: flags, NO_COLOR, and whether it is a terminal (chalk, loaded only by commands that colour). */
import { Chalk, type ChalkInstance } from 'chalk';
import { liveTerminal, type Io, type OutputFlags } from './io.js';

/**
 * Colours for text written to `stream`. `--color=always` (or `--color`) colours whatever the
 * stream is (for `less -R`, `watch --color`); `--color=never` and `--no-color` never. Otherwise
 * (`auto`): only on a terminal that is not `TERM=dumb`, and not with a non-empty NO_COLOR
 * (no-color.org: an empty value means unset).
 */
export function colors(io: Io, flags: OutputFlags, stream: 'stdout' | 'stderr' = 'stderr'): ChalkInstance {
  if (flags.color === true || flags.color === 'always') return new Chalk({ level: 1 });
  const off = flags.color === false || flags.color === 'never' || (io.env.NO_COLOR !== undefined && io.env.NO_COLOR !== '') || !liveTerminal(io, stream);
  return new Chalk({ level: off ? 0 : 1 });
}
