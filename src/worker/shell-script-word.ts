/** A shell that a template may hand a script with -c. */
const SHELL = /(^|\/)(sh|bash|dash|zsh|ksh|mksh|ash|yash|posh)$/;

/**
 * The words of the simple command being read, to spot the script of `sh -c '… {} …'`: a value
 * quoted exactly for the outer shell is still code for the inner one, so no placeholder may
 * stand in that word.
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

  /** The word being read is a script a shell will run: `sh -c WORD`, `bash -lc WORD`, `env sh -c WORD`. */
  isShellScript(): boolean {
    const n = this.words.length;
    return n >= 2 && /^-[A-Za-z]*c[A-Za-z]*$/.test(this.words[n - 1]!) && this.words.slice(0, -1).some((w) => SHELL.test(w.replace(/['"\\]/g, '')));
  }
}
