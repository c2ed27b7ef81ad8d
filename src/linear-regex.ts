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

/**
 * The pattern compiled for the linear-time engine, global (searched from `lastIndex`, as
 * splitWithin does); throws a SyntaxError naming why it cannot be.
 */
export function linearRegExp(source: string): RegExp {
  enable();
  try {
    return new RegExp(source, 'lg');
  } catch {
    new RegExp(source); // a plain syntax error is reported as such
    throw new SyntaxError('uses lookaround, a backreference or a repeat count over a few hundred, which cannot match in time linear in the text; write it without them');
  }
}

/** How long one item's `--colsep` split may take before its attempt fails for good. */
export const SPLIT_BUDGET_MS = 2000;

/**
 * `text.split(re)`, with a time limit. Each search of the linear engine is linear, but a split
 * searches once per field, and a pattern whose first choice looks far ahead (`,[^y]*y|,` on a
 * run of commas) makes every search read the rest of the text: quadratic, minutes on a long
 * item. So the split is done search by search (with String.prototype.split's exact rules) and
 * gives up past `budgetMs`, returning null; one search is linear, so the overrun is bounded.
 * `global` is linearRegExp's (compiled once per pattern): its `lastIndex` is reset here.
 */
export function splitWithin(text: string, global: RegExp, budgetMs: number): string[] | null {
  global.lastIndex = 0;
  if (text === '') return global.test('') ? [] : [''];
  const deadline = performance.now() + budgetMs;
  const parts: string[] = [];
  let from = 0;
  while (global.lastIndex < text.length) {
    const m = global.exec(text);
    if (m === null || m.index >= text.length) break;
    const end = m.index + m[0].length;
    if (end === from) {
      global.lastIndex = m.index + 1; // an empty match where the last field ended splits nothing
    } else {
      parts.push(text.slice(from, m.index), ...m.slice(1));
      from = end;
      if (m[0] === '') global.lastIndex = end;
    }
    if (performance.now() > deadline) return null;
  }
  parts.push(text.slice(from));
  return parts;
}
