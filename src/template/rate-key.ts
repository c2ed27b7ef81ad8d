/**
 * `--rate-key TEMPLATE` (SPEC §10): the batch's `--rate` applies per rendered key, so
 * `--rate 5/s --rate-key '{item.host}'` starts at most 5 a second per host. Rendered once per
 * task as it is enqueued and stored on it (the claim reads it through the store's key gates),
 * so only what a task has before any attempt may be in it.
 */
import { createHash } from '../crypto-on-use.js';
import { UsageError } from '../errors.js';
import { placeholderValue } from './exec-template.js';
import { ITEM_PLACEHOLDER, placeholderAt } from './placeholder.js';
import { checkPlaceholders } from './placeholder-attempts.js';
import type { TemplateTask } from './template-task.js';

/** What an attempt alone has, and so no key can hold: the placeholder, and what to write instead. */
const NOT_YET: Record<string, string> = {
  '{#}': 'the task number, given as the task is stored (a key per task limits nothing: use what tasks share, e.g. {item.host} or {1})',
  '{%}': "the slot an attempt runs in, which a task has only while it runs (use -j to bound what runs at once)",
  '{attempt}': 'the attempt number, which changes with every retry (the key must stay the same)',
  '{out}': 'the temporary file of an attempt',
};

/** A rendered key longer than this is stored as its first KEEP characters and a hash of the whole. */
const MAX_KEY = 256;
const KEEP = 200;

/** Refuses a template no key can be rendered from; `items`: whether the source is a list (item placeholders need one). */
export function checkRateKey(template: string, items: boolean): void {
  if (template.trim() === '') throw new UsageError("--rate-key needs a template, e.g. --rate-key '{item.host}' (or leave it out: --rate is then the batch's)");
  checkPlaceholders(template, '--rate-key');
  for (let at = template.indexOf('{'); at >= 0; at = template.indexOf('{', at + 1)) {
    const ph = placeholderAt(template, at);
    if (!ph) continue;
    const why = ph.input !== undefined ? "a needed stage's result, which a task has only once that stage ran" : NOT_YET[ph.text];
    if (why) throw new UsageError(`--rate-key ${JSON.stringify(template)}: ${ph.text} is ${why}; the key is rendered once, as the task is stored`);
    at += ph.text.length - 1;
  }
  const itemOnly = ITEM_PLACEHOLDER.exec(template);
  if (!items && itemOnly) throw new UsageError(`--rate-key: ${itemOnly[0]} is a placeholder of an item, and this source is not a list; give the list with --items FILE (or \`run -\` for stdin)`);
}

/**
 * The task's rate key: the template with each placeholder's value. A value the task does not
 * have (a record without the field) gives null: the caller counts those and puts them under one
 * shared key. A long key is shortened to its start and a hash, so keys stay small and distinct.
 */
export function renderRateKey(template: string, task: TemplateTask): string | null {
  let key = '';
  for (let i = 0; i < template.length; ) {
    const ph = template[i] === '{' ? placeholderAt(template, i) : null;
    if (!ph) {
      key += template[i++];
      continue;
    }
    try {
      key += placeholderValue(ph, task);
    } catch {
      return null;
    }
    i += ph.text.length;
  }
  return key.length <= MAX_KEY ? key : `${key.slice(0, KEEP)}…${createHash('sha256').update(key).digest('hex').slice(0, 32)}`;
}
