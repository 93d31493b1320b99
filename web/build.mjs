// Builds the console into internal/console/dist, which airlock serve
// embeds: index.html, app.js, app.css and the favicon. Run with
// `npm run build` (after `npm ci`); then rebuild the Go binary.
import * as esbuild from 'esbuild';
import { copyFileSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, '..', 'internal', 'console', 'dist');

mkdirSync(out, { recursive: true });
for (const name of readdirSync(out)) {
  if (name !== '.gitkeep') rmSync(join(out, name), { recursive: true, force: true });
}

try {
  await esbuild.build({
    entryPoints: { app: join(here, 'src', 'main.jsx') },
    outdir: out,
    bundle: true,
    format: 'esm',
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    target: ['es2022', 'chrome110', 'firefox115', 'safari16'],
    minify: process.env.AIRLOCK_CONSOLE_DEV !== '1',
    sourcemap: false,
    legalComments: 'linked',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    loader: { '.woff': 'file', '.woff2': 'file', '.ttf': 'file', '.svg': 'file' },
    assetNames: 'assets/[name]-[hash]',
    logLevel: 'warning',
  });
} catch {
  process.exit(1); // esbuild has printed the errors
}

for (const f of ['index.html', 'favicon.svg']) copyFileSync(join(here, 'src', f), join(out, f));
console.log('console built into', out);
