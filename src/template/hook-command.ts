/**
 * `--on-complete CMD` / `--on-failure CMD` (SPEC §10): a shell command run once at the batch's
 * end. Of the placeholders only `{batch}` means anything there (the counts are in the
 * environment); it is quoted for where it stands, as an `--exec` template's values are.
 */
import { UsageError } from '../errors.js';
import { renderExec } from './exec-command.js';
import { placeholderAt } from './placeholder.js';
import { checkPlaceholders } from './placeholder-attempts.js';
import { quoteByContext } from './template-quoting.js';

/** Refuses a hook no batch end could run as written; returns it. `what` names where it came from. */
export function checkHook(command: string, what: string): string {
  if (command.trim() === '') throw new UsageError(`${what} needs a shell command, e.g. ${what} 'notify-send "{batch} done"' (or none for no hook)`);
  checkPlaceholders(command, what);
  for (let at = command.indexOf('{'); at >= 0; at = command.indexOf('{', at + 1)) {
    const ph = placeholderAt(command, at);
    if (!ph) continue;
    if (ph.text !== '{batch}') {
      throw new UsageError(
        `${what} ${JSON.stringify(command)}: ${ph.text} is a task's, and a hook runs once for the whole batch: use {batch}, and the counts in $SPLITDANCE_SUCCEEDED, $SPLITDANCE_FAILED, $SPLITDANCE_CANCELLED and $SPLITDANCE_TOTAL`,
      );
    }
    at += ph.text.length - 1;
  }
  try {
    quoteByContext(command);
  } catch (err) {
    // The quoting rules are --exec's; the refusal names the hook.
    if (err instanceof UsageError) throw new UsageError(err.message.replace(/^--exec template:/, `${what}:`));
    throw err;
  }
  return command;
}

/** The hook's shell line for `batch`: `{batch}` quoted for where it stands. */
export function hookLine(command: string, batch: string): string {
  const rendered = renderExec(command, { key: '', batch, stage: '', seq: 0, attempt: 0, payload: { version: 1, path: '', rel: '' }, inputs: {} });
  return rendered.fallback ?? rendered.argv[2]!;
}
