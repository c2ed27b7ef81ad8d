/** The placeholders of an `--exec` template (SPEC §4), as written; what they stand for is exec-template.ts's. */
export const PLACEHOLDER = /\{(key|rel|name|stem|ext|dir|start|end|attempt|batch|stage|out|\/\/|\/\.|\/|\.|#|)\}|\{inputs\.([A-Za-z0-9_.-]+)\}/y;

/** A placeholder as written (`{}`, `{inputs.a.out}`): its name, or the path of a stage input. */
export interface Placeholder {
  text: string;
  name: string | undefined;
  input: string | undefined;
}

/** The placeholder starting at `at` in `t`, if any. */
export function placeholderAt(t: string, at: number): Placeholder | null {
  PLACEHOLDER.lastIndex = at;
  const m = PLACEHOLDER.exec(t);
  return m ? { text: m[0], name: m[1], input: m[2] } : null;
}
