// Bundles the playground into one self-contained page, dist/index.html
// (script and styles inline, no network access), which package graph
// embeds. Run `npm ci && npm run build` here, or `go generate ./graph`.
import { build } from 'esbuild';
import { mkdirSync, writeFileSync } from 'node:fs';

const result = await build({
  entryPoints: ['src/main.jsx'],
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['es2020'],
  jsx: 'automatic',
  loader: { '.woff': 'dataurl', '.woff2': 'dataurl', '.ttf': 'dataurl', '.svg': 'dataurl' },
  define: { 'process.env.NODE_ENV': '"production"' },
  legalComments: 'none',
  outdir: 'out',
  write: false,
  logLevel: 'info',
});

let js = '';
let css = '';
for (const file of result.outputFiles) {
  if (file.path.endsWith('.js')) js += file.text;
  if (file.path.endsWith('.css')) css += file.text;
}

// Inline text must not close its element early.
const scriptSafe = js.replace(/<\/script/gi, '<\\/script');
const styleSafe = css.replace(/<\/style/gi, '<\\/style');

const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>stakegraph GraphQL playground</title>
<style>${styleSafe}</style>
</head>
<body>
<div id="root"></div>
<script>${scriptSafe}</script>
</body>
</html>
`;

mkdirSync('dist', { recursive: true });
writeFileSync('dist/index.html', html);
console.log(`dist/index.html: ${(html.length / 1024).toFixed(0)} KiB`);
