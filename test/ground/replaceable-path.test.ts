import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { replaceFile } from '../../src/replaceable-path.js';
import { tempDir } from '../helpers/cli.js';

describe('replaceFile', () => {
  it('replaces a file whose name is 254 bytes of two-byte characters: its temporary name is cut to fit NAME_MAX', async () => {
    const dir = tempDir('sd-replace-');
    const path = join(dir, `${'é'.repeat(127)}`);
    expect(Buffer.byteLength('é'.repeat(127))).toBe(254);
    await replaceFile(path, 'one\n', { what: 'the metrics file', makeFolders: false });
    await replaceFile(path, 'two\n', { what: 'the metrics file', makeFolders: false });
    expect(readFileSync(path, 'utf8')).toBe('two\n');
    expect(readdirSync(dir)).toEqual(['é'.repeat(127)]);
  });
});
