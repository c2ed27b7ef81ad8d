import { randomBytes } from '../crypto-on-use.js';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { PermanentError, UsageError } from '../errors.js';
import { leadingBytes } from '../replaceable-path.js';
import { placeholderValue } from '../template/exec-template.js';
import { placeholderAt } from '../template/placeholder.js';
import { checkPlaceholders } from '../template/placeholder-attempts.js';
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
const PER_ATTEMPT = ['{attempt}', '{out}', '{%}'];

/** Refuses, before anything is written, a template no task could have a stable output path from. */
export function checkOutputTemplate(template: string, needs: string[], field = '--output'): void {
  if (template.trim() === '') throw new UsageError(`${field} needs a path template, e.g. ${field} 'out/{rel}.gz'`);
  checkPlaceholders(template, field);
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
  return checkedOutput(spec, task).path;
}

function checkedOutput(spec: OutputSpec, task: TemplateTask): RenderedOutput {
  const out = renderOutput(spec, task);
  if (out.path === task.payload.path) throw new PermanentError(`declared output ${spec.template} is the input file itself (${out.path}); write the output elsewhere`);
  return out;
}

/** The output path, checked as outputPath does except against the task's own input (the planning pass reports that itself). */
export function renderOutputPath(spec: OutputSpec, task: TemplateTask): string {
  return renderOutput(spec, task).path;
}

/**
 * A rendered output path, and how many of its folders are walked strictly (`strict`): those
 * below its anchor, never through a symlink (output-folders.ts). The anchor is the folder the
 * user typed: the template's own text before its first placeholder, up to its last `/`
 * (`out/{rel}.gz` → `out`, `/data/out/{}` → `/data/out`, relative to the working folder);
 * for a template that starts with a placeholder giving an absolute path, the folder of the
 * source the file was split from (`{}.gz`, `{dir}/x`), or that value's own folder (an
 * absolute `{inputs.STAGE.out}`, a path a needed stage wrote). A template without
 * placeholders is all typed: none. What the values name below the anchor is data.
 */
interface RenderedOutput {
  path: string;
  strict: number;
}

function renderOutput(spec: OutputSpec, task: TemplateTask): RenderedOutput {
  const t = spec.template;
  let rendered = '';
  let written = ''; // the template with every placeholder as one plain character: the `..` it writes itself
  let anchor: string | null = null;
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
    anchor ??= anchorOf(spec.base, rendered, value, task);
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
  const strict = anchor === null ? 0 : foldersBelow(anchor, dirname(path));
  checkLimits(t, path, strict);
  return { path, strict };
}

/** The anchor of an output whose first placeholder gives `value` after the template's text `before` (RenderedOutput). */
function anchorOf(base: string, before: string, value: string, task: TemplateTask): string {
  if (before !== '' || !value.startsWith('/')) return resolve(base, before.slice(0, before.lastIndexOf('/') + 1) || '.');
  const { path, rel } = task.payload;
  const source = path.endsWith(`/${rel}`) ? path.slice(0, -rel.length - 1) || '/' : dirname(path);
  if (task.payload.item === undefined && (value === source || value.startsWith(source.endsWith('/') ? source : `${source}/`))) return source;
  return value.endsWith('/') ? resolve(value) : dirname(resolve(value));
}

/** How many folders `dir` lies below `anchor` (0 when it is not below it: the template's own `..` climbed out). */
function foldersBelow(anchor: string, dir: string): number {
  const rel = relative(anchor, dir);
  if (rel === '' || rel === '..' || rel.startsWith('../') || isAbsolute(rel)) return 0;
  return rel.split('/').length;
}

/** Linux's limits: the longest name of a file or folder, and the longest path a system call takes (its NUL included). */
const NAME_MAX = 255;
const PATH_MAX = 4096;

/**
 * An output path no file system can hold fails its task for good before anything runs: a
 * name over NAME_MAX, or a path (the output's, or its temporary file's beside it) over
 * PATH_MAX. Temporary names always fit NAME_MAX (tempPrefixOf), so only the path can be too long for them.
 */
function checkLimits(template: string, path: string, strict: number): void {
  for (const name of path.split('/')) {
    const bytes = Buffer.byteLength(name);
    if (bytes > NAME_MAX) {
      throw new PermanentError(
        `declared output ${shortened(template, 60)}: the name "${shortened(name, 40)}" is ${bytes} bytes, over NAME_MAX (${NAME_MAX} bytes, the longest file name); no file can have it: shorten the --output template`,
      );
    }
  }
  const bytes = Math.max(Buffer.byteLength(path), Buffer.byteLength(dirname(path)) + 1 + tempNameBytes(basename(path), strict));
  if (bytes >= PATH_MAX) {
    throw new PermanentError(
      `declared output ${shortened(template, 60)}: the path "${shortened(path, 40)}" (with its temporary file, ${bytes} bytes) is over PATH_MAX (${PATH_MAX - 1} bytes, the longest path); no file can have it: shorten the --output template`,
    );
  }
}

/** A long name, path or template in a message: its start. */
function shortened(text: string, chars: number): string {
  return text.length > chars ? `${text.slice(0, chars)}…` : text;
}

const upSteps = (path: string) => path.split('/').filter((s) => s === '..').length;

/**
 * Bytes of the output's name kept in its temporary name. The rest is at most 76 bytes (`.`,
 * `.splitdance-`, 12 of the store's id, `-`, an attempt id of up to 16 digits, `-`, 24 random
 * hex digits, `-` and up to 4 digits of strict folders, `.tmp`), so every temporary name fits
 * NAME_MAX (at most 236 bytes) whatever the output's name.
 */
const NAME_BYTES = 160;

/**
 * The start of an attempt's temporary names: beside the output (so the rename is atomic, on
 * one file system), hidden (a later split of that folder skips it), and naming the store
 * (its identity) and the attempt (its id), so two stores writing one folder, or a stale
 * owner's leftover, never share a name with the current attempt.
 */
export function tempPrefixOf(path: string, store: string, token: number): string {
  const name = leadingBytes(basename(path), NAME_BYTES);
  return join(dirname(path), `.${name}.splitdance-${store.slice(0, 12)}-${token}-`);
}

/** The longest temporary name an output named `name` can have (any store, any attempt). */
function tempNameBytes(name: string, strict: number): number {
  return Buffer.byteLength(basename(tempPrefixOf(`/${name}`, 'x'.repeat(12), Number.MAX_SAFE_INTEGER))) + 24 + suffixOf(strict).length;
}

/**
 * The attempt's temporary path: its prefix and 96 random bits, so no one can plant a file or
 * a symlink at it beforehand (the command or handler creates it; the worker refuses anything
 * but a regular file it finds there). It ends with how many of the output's folders are
 * walked strictly (`-2.tmp`; none: `.tmp`), so a rename redone from the store alone (recovery,
 * another batch) walks the same folders the attempt did (output-folders.ts).
 */
export function tempPathOf(path: string, store: string, token: number, strict = 0): string {
  return `${tempPrefixOf(path, store, token)}${randomBytes(12).toString('hex')}${suffixOf(strict)}`;
}

const suffixOf = (strict: number) => (strict > 0 ? `-${strict}.tmp` : '.tmp');

/** How many folders of the output a temporary path says are walked strictly (tempPathOf). */
export function strictFoldersOf(temp: string): number {
  const m = /-[0-9a-f]{24}-([0-9]{1,4})\.tmp$/.exec(temp);
  return m ? Number(m[1]) : 0;
}

export function outputPathsOf(spec: OutputSpec, task: TemplateTask, store: string, token: number): OutputPaths {
  const { path, strict } = checkedOutput(spec, task);
  return { path, temp: tempPathOf(path, store, token, strict) };
}
