import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Writes `DIR/gated.sh`, the command the kill tests run: it holds its key's flock in
 * `$CANARY_DIR` while it runs (a second holder at once logs `double`), logs its start (with
 * `$RUN`, the run that started it) and end to `$SIDE_EFFECT_LOG`, and between them waits until
 * the file `gate` (a shell word, e.g. `"$GATE"`) exists. Returns the script's path.
 */
export function writeGatedScript(dir: string, gate: string): string {
  const script = join(dir, 'gated.sh');
  writeFileSync(
    script,
    [
      '#!/bin/sh',
      'now() { date +%s%3N; }',
      'exec 9>>"$CANARY_DIR/$SPLITDANCE_KEY.lock"',
      `flock -n 9 || printf '{"type":"double","key":"%s","pid":%s,"holder":0}\\n' "$SPLITDANCE_KEY" $$ >> "$SIDE_EFFECT_LOG"`,
      's=$(now)',
      `printf '{"type":"start","key":"%s","attempt":%s,"pid":%s,"at":%s,"run":"%s"}\\n' "$SPLITDANCE_KEY" "$SPLITDANCE_ATTEMPT" $$ "$s" "$RUN" >> "$SIDE_EFFECT_LOG"`,
      `while [ ! -e ${gate} ]; do sleep 0.02; done`,
      `printf '{"type":"end","key":"%s","attempt":%s,"pid":%s,"start":%s,"end":%s}\\n' "$SPLITDANCE_KEY" "$SPLITDANCE_ATTEMPT" $$ "$s" "$(now)" >> "$SIDE_EFFECT_LOG"`,
      '',
    ].join('\n'),
  );
  chmodSync(script, 0o755);
  return script;
}
