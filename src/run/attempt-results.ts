import { closeSync, constants, fchmodSync, fstatSync, linkSync, lstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, renameSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { ClaimedTask, Settlement, TaskStatus } from '../store/task-store.js';
import type { PrintedAs, RunObserver } from '../coordinator/run-types.js';
import { RESULT_FILES, resultsName, SOURCE_LEVEL } from '../output/results-path.js';
import { RESULTS_COPIES } from '../worker/print-copy.js';
import { printable } from '../printable.js';
import { UsageError } from '../errors.js';

const NEW_FILE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/**
 * `--results DIR`: the stdout, stderr and `seq` of each task's final attempt (the one that
 * ended it: SUCCESS, FAILED or CANCELLED) in `DIR/1/KEY/`, GNU parallel's layout
 * (results-path.ts names KEY). Workers copy each attempt's stdout and stderr apart
 * (print-copy.ts) into a private folder inside DIR (0700, `.splitdance-copies-…`), so the copy
 * of the final attempt is renamed into place (one file system: atomic) and the others are
 * removed: a retried task's earlier attempts leave nothing, and a reader sees a task's old
 * file or its new one, never part of one. With `--print` the printer reads the same copies
 * (this links rather than renames them). The files take the umask's mode, like the folders,
 * which are made as `mkdir -p` would; a symlink or a file where a folder below DIR should be
 * is never followed or replaced. Tasks that did not run (up to date) leave DIR as it is.
 */
export class AttemptResults {
  /** The private folder of the copies, inside DIR. */
  readonly copies: string;
  private lostCount = 0;
  /** The mode a new file gets (0666 less the umask), learnt from the first file made. */
  private fileMode: number | null = null;
  private readonly onExit = () => this.removeCopies();

  constructor(
    private readonly dir: string,
    /** `--print` reads the copies too, and removes them once printed. */
    private readonly printed: boolean,
    private readonly note: (m: string) => void,
  ) {
    try {
      mkdirSync(dir, { recursive: true, mode: 0o777 });
      sweepStale(dir);
      this.copies = mkdtempSync(join(dir, `${RESULTS_COPIES}${hostTag()}-${process.pid}-`));
    } catch (err) {
      // Checked before anything was written (checkResultsDir); changed since.
      throw new UsageError(`--results ${printable(dir)} cannot be written: ${printable((err as Error).message)}; give a folder you can write`);
    }
    process.on('exit', this.onExit);
  }

  /** Tasks whose files could not be put in place (said in a note each). */
  get lost(): number {
    return this.lostCount;
  }

  /** Where a worker writes a command's copies (`.out`, `.err`): `id` is its attempt's token, or a group's print id (PrintedAs). */
  prefixOf(id: number | string): string {
    return join(this.copies, String(id));
  }

  /** The observer with the results written as attempts end, before it hears of them (so before --print, which removes the copies). */
  tap(observer: RunObserver): RunObserver {
    return {
      attemptStarted: (task) => observer.attemptStarted?.(task),
      attemptEnded: (task: ClaimedTask, settlement: Settlement, status: TaskStatus, printed?: PrintedAs) => {
        this.attemptEnded(task, settlement, status, printed);
        observer.attemptEnded(task, settlement, status, printed);
      },
      released: (tasks) => observer.released(tasks),
      note: (m) => observer.note(m),
    };
  }

  /** The run is over: the copies folder goes (the caller has let --print finish first). */
  finish(): void {
    this.removeCopies();
    process.off('exit', this.onExit);
  }

  /**
   * An item of a group gets its group's command's output (`printed`): each item's folder links
   * the same copy, which goes with the copies folder at the end of the run.
   */
  private attemptEnded(task: ClaimedTask, settlement: Settlement, status: TaskStatus, printed?: PrintedAs): void {
    const prefix = this.prefixOf(printed ? printed.id : task.token);
    const final = status === 'SUCCESS' || status === 'FAILED' || status === 'CANCELLED';
    if (final && !settlement.upToDate) {
      try {
        this.publish(task, prefix, printed !== undefined);
      } catch (err) {
        this.lostCount++;
        this.note(`--results: the files of ${printable(task.key)} could not be written in ${printable(this.dir)}: ${printable((err as Error).message)}`);
      }
    }
    if (!this.printed && !printed) for (const s of ['out', 'err'] as const) removeQuietly(`${prefix}.${s}`);
  }

  private publish(task: ClaimedTask, prefix: string, shared: boolean): void {
    const folder = ownFolder(ownFolder(this.dir, SOURCE_LEVEL), resultsName(task.key));
    const seq = this.newFile(`${prefix}.${task.token}.seq`, String(task.seq));
    renameSync(seq, join(folder, RESULT_FILES.seq));
    for (const s of ['out', 'err'] as const) {
      const copy = `${prefix}.${s}`;
      const staged = `${prefix}.${task.token}.${s}.result`;
      if (exists(copy)) {
        if (this.printed || shared) linkSync(copy, staged);
        else renameSync(copy, staged);
        fchmodPath(staged, this.fileMode!);
      } else {
        this.newFile(staged, '');
      }
      renameSync(staged, join(folder, RESULT_FILES[s]));
    }
  }

  /** A new file in the copies folder holding `text`, with the umask's mode (learnt here). */
  private newFile(path: string, text: string): string {
    const fd = openSync(path, NEW_FILE, 0o666);
    try {
      if (text) writeSync(fd, text);
      this.fileMode ??= fstatSync(fd).mode & 0o777;
    } finally {
      closeSync(fd);
    }
    return path;
  }

  private removeCopies(): void {
    try {
      rmSync(this.copies, { recursive: true, force: true });
    } catch {
      // a private folder; the next run on this DIR sweeps it (sweepStale)
    }
  }
}

/** `name` in `parent`, made when missing (the umask's mode); a symlink or anything but a folder there is refused, never followed. */
function ownFolder(parent: string, name: string): string {
  const path = join(parent, name);
  try {
    mkdirSync(path, { mode: 0o777 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const st = lstatSync(path);
  if (st.isSymbolicLink()) throw new Error(`${path} is a symlink; results are never written through one: remove it`);
  if (!st.isDirectory()) throw new Error(`${path} is not a folder: remove it`);
  return path;
}

function fchmodPath(path: string, mode: number): void {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    fchmodSync(fd, mode);
  } finally {
    closeSync(fd);
  }
}

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

function removeQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // never written: the attempt printed nothing there
  }
}

/** This machine, as a folder name's part: a shared DIR on NFS holds other machines' runs too. */
function hostTag(): string {
  return hostname().replace(/[^A-Za-z0-9.-]/g, '_').slice(0, 64);
}

/** Copies folders of this machine's runs that are gone (killed before they could remove theirs). */
function sweepStale(dir: string): void {
  const own = new RegExp(`^${RESULTS_COPIES.replace(/[.]/g, '\\.')}${hostTag().replace(/[.]/g, '\\.')}-([0-9]+)-[A-Za-z0-9]{6}$`);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = own.exec(name)?.[1];
    if (pid === undefined || alive(Number(pid))) continue;
    rmSync(join(dir, name), { recursive: true, force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
