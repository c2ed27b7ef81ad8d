/** Where an `--exec` template is refused: why no quoting keeps a placeholder's value exact there, as the usage error says it. */
import { UsageError } from '../errors.js';

const FIX = `pass the value as an argument instead: sh -c '… "$1" …' _ {}`;
const WHY: Record<string, string> = {
  backquote: `inside \`…\`, where the shell reprocesses backslashes; write $(…) instead of backquotes`,
  param: `inside \${…}, where the shell would expand the value; ${FIX}`,
  arith: `inside $((…)) or ((…)), where the shell would evaluate the value; ${FIX}`,
  script: `inside the script of a shell's -c, which that shell would run with the value in it; ${FIX}`,
  evaluated: `in an argument of eval, trap, let, alias or watch, which is run again as shell code with the value in it; ${FIX}`,
  remote: `in the command ssh hands to the remote shell, which would run it with the value in it; quote it for that shell yourself, or pass it on stdin`,
  heredoc: `inside a here-document, where the shell would expand the value and its lines could end the document; ${FIX}`,
};

/** A placeholder `ph` stands where `why` (a key of WHY) says no quoting keeps its value exact. */
export function refuse(ph: string, why: string): never {
  throw new UsageError(`--exec template: ${ph} stands ${WHY[why]}`);
}

/** A construct dash and bash read differently: no placeholder can be placed safely for both. */
export function ambiguous(what: string, anyPlaceholder: string | null): void {
  if (anyPlaceholder) {
    throw new UsageError(`--exec template: ${what} is read differently by dash and bash, so ${anyPlaceholder} could not be quoted for both; ${FIX}`);
  }
}

/** A quote, `$(`, `${`, backquote or `$((` opened at `at` in `template` and never closed. */
export function unclosed(template: string, what: string, at: number): never {
  throw new UsageError(`--exec template: the ${what} at character ${at + 1} is never closed: ${JSON.stringify(template)}`);
}
