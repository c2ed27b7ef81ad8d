/** The placeholders of an `--exec` template (SPEC §4), as written; what they stand for is exec-template.ts's. */
export const PLACEHOLDER = /\{(key|rel|name|stem|ext|dir|start|end|attempt|batch|stage|out|item|[1-9][0-9]{0,3}(?:\/\/|\/\.|\/|\.)?|\/\/|\/\.|\/|\.|#|%|)\}|\{inputs\.([A-Za-z0-9_.-]+)\}|\{item\.([A-Za-z0-9_.-]+)\}/y;

/** A placeholder as written (`{}`, `{inputs.a.out}`, `{item.id}`): its name, or the path of a stage input or of a record's field. */
export interface Placeholder {
  text: string;
  name: string | undefined;
  input: string | undefined;
  field?: string | undefined;
}

/** The placeholder a match of PLACEHOLDER is. */
export function placeholderOf(m: RegExpExecArray): Placeholder {
  return { text: m[0], name: m[1], input: m[2], field: m[3] };
}

/** The placeholder starting at `at` in `t`, if any. */
export function placeholderAt(t: string, at: number): Placeholder | null {
  PLACEHOLDER.lastIndex = at;
  const m = PLACEHOLDER.exec(t);
  return m ? placeholderOf(m) : null;
}

/** Placeholders that only an item of a list has (`{item}`, `{1}`, `{1.}`, `{item.id}`). */
export const ITEM_PLACEHOLDER = /\{(item|[1-9][0-9]{0,3}(?:\/\/|\/\.|\/|\.)?)\}|\{item\.[A-Za-z0-9_.-]+\}/;
