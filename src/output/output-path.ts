import { randomBytes } from '../crypto-on-use.js';
import { basename, dirname, join, resolve } from 'node:path';
import { PermanentError, UsageError } from '../errors.js';
import { placeholderValue } from '../template/exec-template.js';
import { placeholderAt } from '../template/placeholder.js';
import type { TemplateTask } from '../template/template-task.js';

/**
 * A declared output (`--output TEMPLATE`, SPEC §4): where a task's result file goes. The
 * template takes the `--exec` placeholders and is relative to `base`, the working directory
 * of the `run` that declared it (stored with it, so a resumed run or a `worker` started
 * elsewhere renders the same paths).
 */
export interface OutputSpec {
  template: string;
  base: string;
}

/** Where one attempt writes (`temp`, its `{out}`) and where a success is renamed to (`path`). */
export interface OutputPaths {
  path: string;
  temp: string;
}

const INPUT = /\{inputs\.([A-Za-z0-9_-][A-Za-z0-9_.-]*)\}/g;
/** Placeholders that would give one task several outputs, or none to be up to date against. */
const PER_ATTEMPT = ['{attempt}', '{out}'];

/** Refuses, before anything is written, a template no task could have a stable output path from. */
export function checkOutputTemplate(template: string, needs: string[], field = '--output'): void {
  if (template.trim() === '') throw new UsageError(`${field} needs a path template, e.g. ${field} 'out/{rel}.gz'`);
  for (const p of PER_ATTEMPT) {
    if (template.includes(p)) throw new UsageError(`${field} cannot use ${p}: a task's output path must be the same for every attempt`);
  }
  if (template.endsWith('/')) throw new UsageError(`${field} "${template}" names a folder; name the file, e.g. ${template}{name}.gz`);
  for (const [, path] of template.matchAll(INPUT)) {
    const stage = path!.split('.')[0]!;
    if (!needs.includes(stage)) {
      throw new UsageError(`${field}: {inputs.${path}} reads stage "${stage}", which ${needs.length ? `this stage does not need (needs: ${needs.join(', ')})` : 'is not a needed stage'}`);
    }
  }
}

/**
 * The task's output path, absolute. A placeholder's value is data: one holding a `..`
 * segment or a NUL (a stage result can hold anything) cannot steer the path out of the
 * folder the template names — that attempt fails for good instead.
 */
export function outputPath(spec: OutputSpec, task: TemplateTask): string {
  const path = renderOutputPath(spec, task);
  if (path === task.payload.path) throw new PermanentError(`declared output ${spec.template} is the input file itself (${path}); write the output elsewhere`);
  return path;
}

/** The output path, checked as outputPath does except against the task's own input (the planning pass reports that itself). */
export function renderOutputPath(spec: OutputSpec, task: TemplateTask): string {
  const t = spec.template;
  let rendered = '';
  let written = ''; // the template with every placeholder as one plain character: the `..` it writes itself
  for (let i = 0; i < t.length; ) {
    const ph = t[i] === '{' ? placeholderAt(t, i) : null;
    if (!ph) {
      rendered += t[i];
      written += t[i++];
      continue;
    }
    written += 'x';
    const value = placeholderValue(ph, task);
    // An item is hostile data: one that is an absolute path cannot move the whole output (`{}` first).
    const absolute = rendered === '' && value.startsWith('/') && task.payload.item !== undefined;
    if (value.includes('\0') || value.split('/').includes('..') || absolute) {
      throw new PermanentError(`declared output ${t}: ${ph.text} is ${JSON.stringify(value).slice(0, 200)}, which would put the output outside the folder the template names`);
    }
    rendered += value;
    i += ph.text.length;
  }
  // Values that are harmless alone can still make a `..` with the text beside them
  // (`out/{1}.{2}/x` with `.` and ``): the rendered path may climb only where the template does.
  if (upSteps(rendered) > upSteps(written)) {
    throw new PermanentError(`declared output ${t} renders to ${JSON.stringify(rendered).slice(0, 200)}, whose values make a ".." that would put the output outside the folder the template names`);
  }
  const path = resolve(spec.base, rendered);
  const last = rendered.split('/').at(-1);
  if (rendered === '' || last === '' || last === '.' || basename(path) === '' || path === '/') throw new PermanentError(`declared output ${t} renders to "${rendered}", which is not a file path`);
  return path;
}

const upSteps = (path: string) => path.split('/').filter((s) => s === '..').length;

/** Bytes of the output's name kept in its temporary name: the rest (≈ 70 bytes) must fit NAME_MAX (255). */
const NAME_BYTES = 160;

/**
 * The start of an attempt's temporary names: beside the output (so the rename is atomic, on
 * one file system), hidden (a later split of that folder skips it), and naming the store
 * (its identity) and the attempt (its id), so two stores writing one folder, or a stale
 * owner's leftover, never share a name with the current attempt.
 */
export function tempPrefixOf(path: string, store: string, token: number): string {
  let name = basename(path);
  if (Buffer.byteLength(name) > NAME_BYTES) name = Buffer.from(name).subarray(0, NAME_BYTES).toString().replace(/\uFFFD+$/, '');
  return join(dirname(path), `.${name}.splitdance-${store.slice(0, 12)}-${token}-`);
}

/**
 * The attempt's temporary path: its prefix and 96 random bits, so no one can plant a file or
 * a symlink at it beforehand (the command or handler creates it; the worker refuses anything
 * but a regular file it finds there).
 */
export function tempPathOf(path: string, store: string, token: number): string {
  return `${tempPrefixOf(path, store, token)}${randomBytes(12).toString('hex')}.tmp`;
}

export function outputPathsOf(spec: OutputSpec, task: TemplateTask, store: string, token: number): OutputPaths {
  const path = outputPath(spec, task);
  return { path, temp: tempPathOf(path, store, token) };
}
