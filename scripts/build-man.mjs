// Writes splitdance.1, the man page, from the built CLI's own commands, options and examples
// (src/cli/help/man-page.ts), so it says what --help says. Run by `npm run build`.
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const { buildProgram } = await import(join(ROOT, 'dist/cli/program.js'));
const { commandModel } = await import(join(ROOT, 'dist/cli/help/command-model.js'));
const { manPage } = await import(join(ROOT, 'dist/cli/help/man-page.js'));
const { version } = createRequire(import.meta.url)('../package.json');
writeFileSync(join(ROOT, 'splitdance.1'), manPage(commandModel(buildProgram({}, () => {})), version));
