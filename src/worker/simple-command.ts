/**
 * Recognises a command line that needs no shell, as GNU make does: plain words, single-
 * quoted strings (how every placeholder is substituted), double-quoted strings without `$`
 * or backquotes, and backslash escapes, and a first word that is neither a shell builtin
 * nor a reserved word nor an assignment. Such a line can be executed directly with exactly
 * the arguments `/bin/sh -c` would pass, saving a shell start per task. Anything else —
 * `$`, globs, redirections, pipes, `;`, a newline outside quotes — returns null and runs
 * under `/bin/sh -c` as before.
 */

/** Characters sh takes literally anywhere in a word. */
const LITERAL = /^[A-Za-z0-9_./,:@%+=-]$/;

/** Words sh (dash or bash) would run itself, or that open a compound command. */
const SHELL_WORDS = new Set([
  '.', ':', '[', '[[', ']]', '!', '{', '}', 'alias', 'bg', 'break', 'builtin', 'caller', 'case', 'cd', 'chdir',
  'command', 'compgen', 'complete', 'compopt', 'continue', 'coproc', 'declare', 'dirs', 'disown', 'do', 'done',
  'echo', 'elif', 'else', 'enable', 'esac', 'eval', 'exec', 'exit', 'export', 'false', 'fc', 'fg', 'fi', 'for',
  'function', 'getopts', 'hash', 'help', 'history', 'if', 'in', 'jobs', 'kill', 'let', 'local', 'logout',
  'mapfile', 'popd', 'printf', 'pushd', 'pwd', 'read', 'readarray', 'readonly', 'return', 'select', 'set',
  'shift', 'shopt', 'source', 'suspend', 'test', 'then', 'time', 'times', 'trap', 'true', 'type', 'typeset',
  'ulimit', 'umask', 'unalias', 'unset', 'until', 'wait', 'while',
]);

/** After `\` inside double quotes only these lose the backslash (POSIX 2.2.3); `\<newline>` is left to the shell. */
const DQ_ESCAPED = new Set(['$', '`', '"', '\\']);

/** The argument vector `/bin/sh -c command` would execute, or null when it takes a shell. */
export function directArgv(command: string): string[] | null {
  const words: string[] = [];
  let word: string | null = null;
  let firstRaw = '';
  for (let i = 0; i < command.length; i++) {
    const c = command[i]!;
    if (c === ' ' || c === '\t') {
      if (word !== null) words.push(word);
      word = null;
      continue;
    }
    if (words.length === 0) firstRaw += c;
    if (c === "'") {
      const end = command.indexOf("'", i + 1);
      if (end < 0) return null;
      if (words.length === 0) firstRaw += command.slice(i + 1, end + 1);
      word = (word ?? '') + command.slice(i + 1, end);
      i = end;
    } else if (c === '"') {
      let text = '';
      for (i++; command[i] !== '"'; i++) {
        const d = command[i];
        if (d === undefined || d === '$' || d === '`') return null;
        if (d === '\\') {
          const next = command[i + 1];
          if (next === '\n' || next === undefined) return null;
          if (DQ_ESCAPED.has(next)) i++;
        }
        text += command[i];
      }
      if (words.length === 0) firstRaw += `${text}"`;
      word = (word ?? '') + text;
    } else if (c === '\\') {
      const next = command[i + 1];
      if (next === undefined || next === '\n') return null;
      if (words.length === 0) firstRaw += next;
      word = (word ?? '') + next;
      i++;
    } else if (LITERAL.test(c)) {
      word = (word ?? '') + c;
    } else {
      return null;
    }
  }
  if (word !== null) words.push(word);
  const first = words[0];
  if (first === undefined || first === '' || firstRaw.includes('=') || SHELL_WORDS.has(first)) return null;
  return words;
}
