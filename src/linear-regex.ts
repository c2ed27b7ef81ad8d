import { setFlagsFromString } from 'node:v8';

/**
 * A user's regular expression applied to data that is not theirs (`--colsep` to every item of a
 * list) must answer in time linear in the text: a backtracking pattern such as `(a+)+b` on a long
 * run of `a`s ran for minutes inside the coordinator, where no commit, heartbeat or signal could
 * run. V8 has a second, automaton-based engine that never backtracks, chosen per pattern by the
 * `l` flag once the engine is enabled. It takes every pattern but those whose meaning needs
 * backtracking: lookaround (`(?=`, `(?<=`…), backreferences (`\1`), `u`-mode property classes
 * and counted repeats above a few hundred. Those are refused with a reason instead.
 */
let enabled = false;

function enable(): void {
  if (enabled) return;
  // Process-wide and read when a pattern is compiled, so setting it before the first `l`
  // pattern is enough; it changes nothing for patterns compiled without the flag.
  setFlagsFromString('--enable-experimental-regexp-engine');
  enabled = true;
}

/** The pattern compiled for the linear-time engine; throws a SyntaxError naming why it cannot be. */
export function linearRegExp(source: string): RegExp {
  enable();
  try {
    return new RegExp(source, 'l');
  } catch {
    new RegExp(source); // a plain syntax error is reported as such
    throw new SyntaxError('uses lookaround, a backreference or a repeat count over a few hundred, which cannot match in time linear in the text; write it without them');
  }
}
