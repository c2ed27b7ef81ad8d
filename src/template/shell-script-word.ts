/**
 * A word that may name a shell that a template hands a script with -c. By its name: any name
 * ending in `sh`, perhaps with a version (sh, bash, rbash, dash, zsh, ksh93, mksh, yash, fish,
 * tcsh, pwsh, xonsh, `bash5.2`, …) but ssh and a script file such as `run.sh`; and rc, es, nu,
 * oil. And any name the template does not spell out, which could be any of those: one made by an
 * expansion (`$SHELL`, `$(which sh)`, `` `which sh` ``) or by a glob or braces (`/bin/s[h]`,
 * `/bin/{sh,x}`). A name is read with its quotes and backslashes removed, as the shell reads it
 * (`"s"h`, `s\h`).
 */
const SHELL_NAME = /^(?!ssh$|hash$)[\w+-]*sh[\d.]*$|^(rc|es|nu|oil)$/;
const UNSPELLED = /[$`*?[{]/;
const mayNameAShell = (word: string) => UNSPELLED.test(word) || SHELL_NAME.test(base(word));

/**
 * Commands that run every word after them as shell code: the shell's own `eval`, `trap`
 * (its action), `let` and `alias` (arithmetic and a definition evaluated later), and `watch`,
 * which joins its arguments and hands them to `sh -c`. `command eval`, `builtin eval` and
 * `nice watch` are the same: the word is found anywhere in the simple command.
 */
const EVALUATES_ARGS = new Set(['eval', 'trap', 'let', 'alias', 'watch']);

/** Programs whose `-c CMD` / `--command CMD` runs CMD through a shell: `su -c`, `runuser -c`, `script -c`, `flock FILE -c`. */
const COMMAND_FLAG = new Set(['su', 'runuser', 'script', 'flock']);

/** ssh options that take an argument: the first other word is the destination, the rest a remote shell's command line. */
const SSH_ARG_OPTIONS = 'BbcDEeFIiJLlmOopQRSWw';

/** The reasons of template-refusals.ts's WHY a placeholder may not stand in the word being read. */
export type Reevaluation = 'script' | 'evaluated' | 'remote';

const bare = (w: string) => w.replace(/['"\\]/g, '');
const base = (w: string) => w.slice(w.lastIndexOf('/') + 1);

/**
 * The words of the simple command being read, to spot a word that a second shell will read
 * again as code: the script of `sh -c '… {} …'` (also `sh -c -- …`, `bash -O extglob -c …`,
 * `env sh -c`, `xargs sh -c`, `find -exec sh -c`, `nice`/`timeout`/`nohup`/`sudo sh -c`), the
 * arguments of `eval`, `trap`, `let`, `alias`, `watch`, the command of `su -c` and its kin, and
 * the remote command of `ssh host …`. A value quoted exactly for the outer shell is still code
 * for the inner one, so no placeholder may stand there.
 */
export class CommandWords {
  private words: string[] = [];
  private from: number | null = null;

  /** Called at command level for each position before it is read. */
  see(t: string, i: number): void {
    const c = t[i]!;
    if (c === ' ' || c === '\t' || c === '<' || c === '>') this.end(t, i);
    else if (';&|()\n'.includes(c)) {
      this.end(t, i);
      this.words = [];
    } else this.from ??= i;
  }

  private end(t: string, i: number): void {
    if (this.from !== null) this.words.push(t.slice(this.from, i));
    this.from = null;
  }

  /** Why the word being read (`t` up to `i`) will be read again as code, or null. */
  reevaluation(t: string, i: number): Reevaluation | null {
    const w = this.words.map(bare);
    const current = this.from === null ? '' : bare(t.slice(this.from, i));
    for (let k = 0; k < w.length; k++) {
      const name = base(w[k]!);
      if (EVALUATES_ARGS.has(name)) return 'evaluated';
      if (mayNameAShell(w[k]!) && isFirstOperandAfterC(w, k)) return 'script';
      if (COMMAND_FLAG.has(name) && (/^(-[A-Za-z]*c|--command)$/.test(w.at(-1) ?? '') || /^--command=/.test(current))) return 'script';
      if (name === 'ssh' && sshDestinationBefore(w, k)) return 'remote';
    }
    return null;
  }
}

/**
 * Whether the word after `w` is the script of the shell at `w[k]`: options up to it (one of
 * them a cluster with `c`), and it the first operand. `-o NAME`, `-O NAME`, `--rcfile FILE`
 * and `--init-file FILE` take the next word; `--` and `-` end the options.
 */
function isFirstOperandAfterC(w: string[], k: number): boolean {
  let sawC = false;
  for (let j = k + 1; j < w.length; j++) {
    const a = w[j]!;
    if (a === '--' || a === '-') return sawC && j === w.length - 1;
    if (/^[-+][A-Za-z]+$/.test(a)) {
      if (a[0] === '-' && a.includes('c')) sawC = true;
      if (/[oO]$/.test(a)) j++; // its argument
      continue;
    }
    if (a === '--rcfile' || a === '--init-file') {
      j++;
      continue;
    }
    if (/^--[A-Za-z-]+(=.*)?$/.test(a)) continue;
    return false; // an operand already: the script (or a script file) is given before this word
  }
  // An option still waiting for its argument (`sh -c -o {}`) makes this word that argument.
  return sawC && !endsWithArgOption(w, k);
}

function endsWithArgOption(w: string[], k: number): boolean {
  let pending = false;
  for (let j = k + 1; j < w.length; j++) {
    const a = w[j]!;
    if (pending) pending = false;
    else pending = /^[-+][A-Za-z]*[oO]$/.test(a) || a === '--rcfile' || a === '--init-file';
  }
  return pending;
}

/** Whether ssh at `w[k]` has its destination among the words read, so the word being read is remote shell code. */
function sshDestinationBefore(w: string[], k: number): boolean {
  for (let j = k + 1; j < w.length; j++) {
    const a = w[j]!;
    if (a === '--') return j + 1 < w.length;
    if (/^-[A-Za-z0-9]+$/.test(a)) {
      if (SSH_ARG_OPTIONS.includes(a.at(-1)!)) j++; // `-p 22`, `-vo Opt`: its argument
      continue;
    }
    return true; // the destination
  }
  return false;
}
