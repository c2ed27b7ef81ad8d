import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { compareFile, firstState, STILL_MS } from '../../src/split/file-growth.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sd-growth-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const fresh = { finished: false, now: Date.now() };
const lastOf = (sizes: number[]) => sizes[sizes.length - 1];

describe('a last line without a newline (file-growth)', () => {
  it('ends the split at the last newline while the file is fresh, found across read blocks', () => {
    const path = join(dir, 'out.log');
    const head = 'a\nb\n';
    writeFileSync(path, head + 'x'.repeat(200_000)); // the last line spans several 64 KiB reads
    const first = firstState(path, fresh);
    expect(first.state.sizes).toEqual([head.length]);
    expect(first.left).toMatchObject({ bytes: 200_000 });
    // Still no newline in the new bytes: the same state, the tail still left.
    appendFileSync(path, 'y'.repeat(10));
    const same = compareFile(path, first.state, { finished: false, now: Date.now() });
    expect(same).toMatchObject({ kind: 'same', left: { bytes: 200_010 } });
    // Completed, with part of the next line: the line is a new segment, the next waits.
    appendFileSync(path, '\nnext');
    const grown = compareFile(path, first.state, { finished: false, now: Date.now() });
    expect(grown).toMatchObject({ kind: 'grown', added: 200_011, left: { bytes: 4 } });
    if (grown.kind === 'grown') expect(lastOf(grown.state.sizes)).toBe(head.length + 200_011);
  });

  it('takes the last line with --finished or once the file has been still for STILL_MS', () => {
    const path = join(dir, 'done.log');
    writeFileSync(path, 'a\nlast');
    expect(firstState(path, { finished: true, now: Date.now() })).toMatchObject({ state: { sizes: [6] }, left: null });
    expect(firstState(path, { finished: false, now: Date.now() + STILL_MS })).toMatchObject({ state: { sizes: [6] }, left: null });
    expect(firstState(path, { finished: false, now: Date.now() + STILL_MS - 60_000 })).toMatchObject({ state: { sizes: [2] } });
    // A file of one unterminated line: nothing to split yet.
    writeFileSync(path, 'only');
    expect(firstState(path, fresh)).toMatchObject({ state: { sizes: [0] }, left: { bytes: 4 } });
  });
});
