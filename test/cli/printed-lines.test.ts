import { describe, expect, it } from 'vitest';
import { PrintedLines } from '../../src/cli/printed-lines.js';

// `--print` writes an attempt's output in pieces (1 MiB each): a line cut between two pieces
// still gets one tag, at its start, and the last line still gets its newline.

const b = (s: string) => Buffer.from(s);
const run = (lines: PrintedLines, pieces: string[], wholeLines = false) =>
  pieces.map((p) => lines.add(b(p), wholeLines).toString()).join('') + lines.end().toString();

describe('PrintedLines', () => {
  it('tags every line once, however the output is cut into pieces', () => {
    expect(run(new PrintedLines(b('k\t')), ['one\ntw', 'o\nthr', 'ee'])).toBe('k\tone\nk\ttwo\nk\tthree\n');
    expect(run(new PrintedLines(b('k\t')), ['a\n', '\n', 'b\n'])).toBe('k\ta\nk\t\nk\tb\n');
  });

  it('ends a last line without its newline, and adds nothing to one that has it', () => {
    expect(run(new PrintedLines(null), ['abc', 'def'])).toBe('abcdef\n');
    expect(run(new PrintedLines(null), ['abc\n'])).toBe('abc\n');
  });

  it('above the bar, holds a partial line back until its end', () => {
    const lines = new PrintedLines(b('k\t'));
    expect(lines.add(b('one\ntw'), true).toString()).toBe('k\tone\n');
    expect(lines.add(b('o\nx'), true).toString()).toBe('k\ttwo\n');
    expect(lines.end().toString()).toBe('k\tx\n');
  });
});
