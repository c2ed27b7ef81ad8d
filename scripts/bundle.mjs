#!/usr/bin/env node
// Bundles the compiled CLI and worker entries (dist/cli/main.js, dist/worker/child-main.js)
// into dist/bundle/, the command's own files: one file per entry plus chunks shared between
// them and the commands' lazily loaded parts (code splitting keeps each command's imports
// lazy). Node 20 resolves, reads and links each ES module apart, and a command loaded about
// 140 of them: bundled, a one-task run starts about 40 ms sooner (docs/benchmarks.md).
//
// What else is measured to shorten start-up (docs/benchmarks.md, "Start-up"):
// - The files are `.mjs`: Node 20 looks up the package scope of every `.js` module it loads
//   (a package.json walk per module, ≈ 3 ms of `status`); an `.mjs` is a module by its name.
// - The pure-JS packages a command loads are bundled into its chunks instead of resolved,
//   read and linked file by file (commander, chalk, bytes, ms, …). Kept as their own files:
//   better-sqlite3 (a native addon), pg (with its optional native half), tsx (the loader a
//   TypeScript job file registers) and prom-client (optional peers).
// - commander requires child_process at load for a feature splitdance does not use
//   (executable subcommands): its require is deferred to first use (lazyRequire below), so
//   a command that starts no process does not load it.
import { build } from 'esbuild';
import { readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const outdir = join(dist, 'bundle');
rmSync(outdir, { recursive: true, force: true });
const { metafile } = await build({
  absWorkingDir: root,
  entryPoints: [join(dist, 'cli/main.js'), join(dist, 'worker/child-main.js')],
  outbase: dist,
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: ['better-sqlite3', 'pg', 'pg-native', 'tsx', 'tsx/*', 'prom-client'],
  // The bundled CommonJS packages require Node's built-in modules: an ES module has no
  // require of its own, so each file gets one.
  banner: { js: "import { createRequire as __bundleRequire } from 'node:module';\nconst require = __bundleRequire(import.meta.url);" },
  plugins: [lazyRequire(/[\\/]node_modules[\\/]commander[\\/]/, 'node:child_process')],
  chunkNames: 'chunks/[name]-[hash]',
  outExtension: { '.js': '.mjs' },
  logLevel: 'warning',
  metafile: true,
});
// Which compiled modules each bundle file holds: the start-up test reads it to name what a
// command loaded (test/cli/start-up-loads.test.ts). Not shipped.
writeFileSync(join(dist, 'bundle-meta.json'), JSON.stringify(metafile));

// The bundled packages' own license texts travel with their code.
writeFileSync(join(outdir, 'THIRD-PARTY-LICENSES.txt'), thirdPartyLicenses(metafile));

/** Each package bundled into an output: its name, version and license file, one after another. */
function thirdPartyLicenses(meta) {
  const dirs = new Set();
  for (const output of Object.values(meta.outputs)) {
    for (const input of Object.keys(output.inputs)) {
      const m = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input);
      if (m) dirs.add(m[1]);
    }
  }
  return [...dirs]
    .sort()
    .map((dir) => {
      const pkg = JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8'));
      const file = readdirSync(join(root, dir)).find((f) => /^licen[cs]e([-.][\w.-]+)?$/i.test(f));
      if (!file) throw new Error(`${dir} has no license file to ship with its bundled code`);
      return `${pkg.name} ${pkg.version} (${pkg.license})\n\n${readFileSync(join(root, dir, file), 'utf8').trim()}\n`;
    })
    .join('\n---\n\n');
}

/**
 * A `require(builtin)` from the packages whose path matches `importer` gets the module on
 * first use of one of its properties, not at load: the same object, later.
 */
function lazyRequire(importer, builtin) {
  return {
    name: `lazy ${builtin}`,
    setup(b) {
      b.onResolve({ filter: new RegExp(`^${builtin}$`) }, (args) =>
        args.kind === 'require-call' && importer.test(args.importer) ? { path: builtin, namespace: 'lazy-builtin' } : undefined,
      );
      b.onLoad({ filter: /.*/, namespace: 'lazy-builtin' }, (args) => ({
        loader: 'js',
        contents: `let m;\nconst load = () => (m ??= require(${JSON.stringify(args.path)}));\nmodule.exports = new Proxy({}, { get: (_, k) => load()[k], has: (_, k) => k in load() });\n`,
      }));
    },
  };
}

