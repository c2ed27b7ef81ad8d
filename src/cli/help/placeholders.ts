/**
 * The placeholders of `--exec` and `--output`, as `run --help` lists them: the spellings
 * (GNU parallel's beside ours) and what each stands for, for /data/logs/2025/01/app.log with
 * the key 2025/01/app.log. The engine's own list is template/placeholder.ts; a unit test keeps
 * the two and the README's table the same.
 */
export const PLACEHOLDER_HELP: [spellings: string[], meaning: string][] = [
  [['{}'], 'the absolute path: /data/logs/2025/01/app.log'],
  [['{key}', '{rel}'], 'the key and the path under the source: 2025/01/app.log (a chunk: name:00003 and the file name)'],
  [['{name}', '{/}'], 'the file name: app.log'],
  [['{stem}', '{/.}'], 'the name without its extension: app'],
  [['{ext}'], 'the extension, with its dot: .log'],
  [['{dir}', '{//}'], 'the folder: /data/logs/2025/01'],
  [['{.}'], 'the path without its extension: /data/logs/2025/01/app'],
  [['{start}', '{end}'], "a chunk's byte range (empty for files)"],
  [['{attempt}'], '1 for the first attempt'],
  [['{batch}', '{#}'], 'the batch name, the task sequence number'],
  [['{%}'], 'the slot, 1 to -j: no two running at once share one'],
  [['{stage}', '{inputs.STAGE.FIELD}'], "with stages: the stage, a field of a needed stage's result"],
  [['{out}'], 'with --output: the temporary file the attempt writes ($SPLITDANCE_OUT too)'],
  [['{item}', '{1}', '{item.FIELD}'], "an item (--items, run -, :::): its text ({} too), fields (::: groups, --colsep), a JSON record's field"],
  [['{1.}', '{1/}', '{1//}', '{1/.}'], 'a field read as a path, as GNU parallel reads it'],
];

/** How an item's path placeholders and braces that are no placeholder are read (template/placeholder-attempts.ts). */
const BRACES = [
  "For an item, {.} {/} {//} {/.} {name} {stem} {dir} {ext} {rel} read the item's",
  "text as a path, as GNU parallel does: {.} of tree/sub/one.txt is tree/sub/one.",
  'A {…} holding a name or punctuation that is none of these ({nmae}, {##},',
  "{= perl =}) is refused (exit 2). Braces of shell, awk or jq code are left as",
  "written: {print $1}, {a,b}, {1..5}, ${HOME}, %{x}, {{.Id}}, { next }.",
].map((l) => `  ${l}`).join('\n');

/** The "Placeholders:" block of `run --help`. */
export function placeholdersText(): string {
  const rows = PLACEHOLDER_HELP.map(([s, meaning]) => [s.join(' '), meaning] as const);
  const width = Math.max(...rows.map(([s]) => s.length));
  return (
    '\nPlaceholders (--exec, --output; each value is shell-quoted for where it stands):\n' +
    rows.map(([s, meaning]) => `  ${s.padEnd(width)}  ${meaning}`).join('\n') +
    '\n\n' +
    BRACES
  );
}
