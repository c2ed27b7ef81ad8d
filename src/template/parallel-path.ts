/**
 * An item's text read as a path, exactly as GNU parallel reads it (SPEC §3): its
 * replacement strings are Perl substitutions on the text, not a file system's idea of a
 * path, so `.bashrc` has no stem and `x/` no name. The same regexes in JS, which read `.`
 * and `$` as Perl does without flags (`.` stops at a newline, `$` is the true end here).
 */

/** `{.}`: without its extension (`tree/sub/one.txt` → `tree/sub/one`; `.bashrc` → ``): the last `.` and what follows it, where no `/` or `.` does. */
export function withoutExtension(text: string): string {
  return text.replace(/\.[^/.]*$/, '');
}

/** `{/}`: its name (`tree/sub/one.txt` → `one.txt`; `x/` → ``): everything up to the last `/` taken off. */
export function nameOf(text: string): string {
  return text.replace(/.*\//, '');
}

/** `{/.}`: its name without extension (`tree/sub/one.txt` → `one`). */
export function stemOf(text: string): string {
  return withoutExtension(nameOf(text));
}

/** `{ext}` of an item: what `{.}` takes off, its dot kept (`.txt`; `.bashrc` for `.bashrc`), so `{.}{ext}` is `{}`. */
export function extensionOf(text: string): string {
  return text.slice(withoutExtension(text).length);
}

/**
 * `{//}`: its folder, as Perl's File::Basename dirname gives it (`tree/sub/one.txt` →
 * `tree/sub`; `a.txt`, `x/` and `` → `.`; `/x` → `/`; `a/b/` → `a`).
 */
export function folderOf(text: string): string {
  const [name, parent] = fileparse(text);
  let dir = stripTrailingSlashes(parent);
  if (name === '') {
    [, dir] = fileparse(dir);
    dir = stripTrailingSlashes(dir);
  }
  return dir;
}

/** File::Basename's fileparse on Unix: the folder (up to the last `/`, or `./` when there is none) and the name. */
function fileparse(text: string): [string, string] {
  const m = /^([\s\S]*\/)?([\s\S]*)$/.exec(text)!;
  return [m[2]!, m[1] || './'];
}

/** File::Basename's strip of trailing slashes, which never takes the first character. */
function stripTrailingSlashes(dir: string): string {
  return dir.replace(/([\s\S])\/*$/, '$1');
}
