// Copy the vendored browser assets from node_modules into ../static/dist, and bundle the drill editor.
// htmx and KaTeX ship ready-to-serve builds, so they are copied; CodeMirror 6 ships ES modules,
// so esbuild bundles src/editor.js (and only the CodeMirror parts it imports) into one minified file.
import { cpSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, "..", "static", "dist");
const modules = join(here, "node_modules");

// [source under node_modules, destination under static/dist]
const files = [
  ["htmx.org/dist/htmx.min.js", "htmx/htmx.min.js"],
  ["katex/dist/katex.min.js", "katex/katex.min.js"],
  ["katex/dist/katex.min.css", "katex/katex.min.css"],
  ["katex/dist/contrib/auto-render.min.js", "katex/contrib/auto-render.min.js"],
  ["katex/dist/fonts", "katex/fonts"],
];

for (const [source, target] of files) {
  const destination = join(dist, target);
  rmSync(destination, { recursive: true, force: true });
  mkdirSync(dirname(destination), { recursive: true });
  cpSync(join(modules, source), destination, { recursive: true });
}
console.log(`copied ${files.length} assets to ${dist}`);

const { build } = await import("esbuild");
await build({
  entryPoints: [join(here, "src", "editor.js")],
  outfile: join(dist, "editor.js"),
  bundle: true,
  format: "iife",
  globalName: "QuizEditor",
  minify: true,
  target: ["es2020"],
  legalComments: "linked",
  logLevel: "warning",
});
console.log(`bundled the editor to ${join(dist, "editor.js")}`);
