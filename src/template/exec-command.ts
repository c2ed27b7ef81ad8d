import { PermanentError } from '../errors.js';
import { placeholderValue } from './exec-template.js';
import type { Placeholder } from './placeholder.js';
import { checkPlaceholders } from './placeholder-attempts.js';
import { joinQuoted, type QuotedLine } from './quoted-line.js';
import { simpleCommandWords } from './simple-command.js';
import type { TemplateTask } from './template-task.js';
import { quoteByContext } from './template-quoting.js';

/** What runs for one `--exec` attempt. */
export interface ExecCommand {
  /** What to execute: a simple command's words, or ['/bin/sh', '-c', line]. */
  argv: string[];
  /**
   * For a direct argv: the same command as a shell line, to run with /bin/sh -c instead when
   * argv[0] cannot be executed (not found, not executable, a script without #!), so the
   * outcome and message are the shell's. Null when argv already is the shell.
   */
  fallback: string | null;
}

/** A template compiled once: its distinct placeholders, its shell line, and its words when it needs no shell. */
export interface Compiled {
  slots: Placeholder[];
  line: QuotedLine;
  /** The slot (into `slots`) of each hole of `line`. */
  lineSlots: number[];
  /** Each word's parts: text, or the slot whose value goes there unquoted. */
  words: (string | number)[][] | null;
}

/** A worker runs a batch's few templates (one per stage); the bound only guards against a leak. */
const MAX_CACHED = 64;
const cache = new Map<string, Compiled>();

/**
 * Renders an `--exec` template for one task straight to what is executed: a simple command
 * (simple-command.ts) becomes its argv with each value in place, unquoted, with no shell
 * started; anything else the line of template-quoting.ts, where every value is quoted for
 * where it stands, so a file named `a'b $(touch x);.log` is exactly one argument, or part of
 * one, and runs nothing. Both are the same argv `/bin/sh -c` would execute for that line.
 * A template checkTemplate would refuse (a batch stored by an older version) is a
 * PermanentError: no attempt of it can ever run exactly.
 */
export function renderExec(template: string, task: TemplateTask): ExecCommand {
  const c = compiledExec(template);
  const values = c.slots.map((slot) => placeholderValue(slot, task));
  const line = joinQuoted(c.line, c.lineSlots.map((k) => values[k]!));
  if (c.words === null) return { argv: ['/bin/sh', '-c', line], fallback: null };
  return { argv: c.words.map((parts) => wordOf(parts, values)), fallback: line };
}

/**
 * The compiled form of `template`, cached: what renderExec renders one task from and
 * group-command.ts many. A template checkTemplate would refuse is a PermanentError.
 */
export function compiledExec(template: string): Compiled {
  return cache.get(template) ?? compile(template);
}

function wordOf(parts: (string | number)[], values: string[]): string {
  let word = '';
  for (const part of parts) word += typeof part === 'string' ? part : values[part];
  return word;
}

function compile(template: string): Compiled {
  let line: QuotedLine;
  try {
    checkPlaceholders(template, '--exec');
    line = quoteByContext(template);
  } catch (err) {
    if ((err as Error).name === 'UsageError') throw new PermanentError((err as Error).message);
    throw err;
  }
  const slots: Placeholder[] = [];
  const slotOf = (ph: Placeholder): number => {
    const k = slots.findIndex((s) => s.text === ph.text);
    return k >= 0 ? k : slots.push(ph) - 1;
  };
  const lineSlots = line.holes.map(slotOf);
  const words = simpleCommandWords(template)?.map((parts) => parts.map((p) => (typeof p === 'string' ? p : slotOf(p)))) ?? null;
  const compiled = { slots, line, lineSlots, words };
  if (cache.size >= MAX_CACHED) cache.clear();
  cache.set(template, compiled);
  return compiled;
}
