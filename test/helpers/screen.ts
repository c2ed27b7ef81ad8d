/**
 * What a terminal `columns` wide shows after `output`: a small emulator of the codes the CLI
 * writes (cursor moves, line clears, autowrap on or off, colours ignored), so a test reads
 * the screen a person reads. `lines` joins the rows a long line wrapped onto back into one.
 */
export function emulateScreen(output: string, columns: number): { rows: string[]; lines: string[] } {
  const rows: string[][] = [[]];
  const continued: boolean[] = [false];
  let row = 0;
  let col = 0;
  let autowrap = true;
  const at = (r: number) => {
    while (rows.length <= r) {
      rows.push([]);
      continued.push(false);
    }
    return rows[r]!;
  };
  for (let i = 0; i < output.length; i++) {
    const ch = output[i]!;
    if (ch === '\x1b') {
      const csi = /^\x1b\[(\??)([0-9;]*)([A-Za-z])/.exec(output.slice(i, i + 24)); // eslint-disable-line no-control-regex
      if (!csi) {
        i += 1; // ESC 7, ESC 8 and the like: no effect on the text
        continue;
      }
      i += csi[0].length - 1;
      const [, priv, params, final] = csi;
      const n = params === '' ? 1 : Number(params!.split(';')[0]);
      const p0 = params === '' ? 0 : Number(params!.split(';')[0]);
      if (priv === '?') {
        if (params === '7' && (final === 'h' || final === 'l')) autowrap = final === 'h';
      } else if (final === 'G') col = Math.min(columns - 1, n - 1);
      else if (final === 'A') row = Math.max(0, row - n);
      else if (final === 'B') row += n;
      else if (final === 'C') col = Math.min(columns - 1, col + n);
      else if (final === 'D') col = Math.max(0, col - n);
      else if (final === 'K') {
        const r = at(row);
        if (p0 === 0) r.length = Math.min(r.length, col);
        else if (p0 === 2) {
          r.length = 0;
          continued[row] = false;
        } else for (let c = 0; c <= col && c < r.length; c++) r[c] = ' ';
      } else if (final === 'J' && p0 === 0) {
        at(row).length = Math.min(at(row).length, col);
        rows.length = row + 1;
        continued.length = row + 1;
      }
      continue;
    }
    if (ch === '\r') col = 0;
    else if (ch === '\n') {
      row++;
      at(row);
    } else if (ch === '\t') col = Math.min(columns - 1, (Math.floor(col / 8) + 1) * 8);
    else if (ch >= ' ') {
      if (col >= columns) {
        if (autowrap) {
          row++;
          col = 0;
          at(row);
          continued[row] = true;
        } else col = columns - 1;
      }
      const r = at(row);
      while (r.length < col) r.push(' ');
      r[col] = ch;
      col++;
    }
  }
  const texts = rows.map((r) => r.join('').trimEnd());
  const lines: string[] = [];
  texts.forEach((t, r) => {
    if (continued[r] && lines.length) lines[lines.length - 1] += t;
    else lines.push(t);
  });
  return { rows: texts, lines: lines.filter((l) => l !== '') };
}
