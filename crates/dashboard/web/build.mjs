// Bundles the dashboard (src/main.js and the style sheets it imports, with Preact, htm and
// uPlot) into OUT/assets/, with content-hashed names, and writes OUT/index.html naming them.
//
//   node build.mjs NODE_MODULES OUT
//
// OUT/assets/licenses.txt holds the licences of the bundled packages.
//
// NODE_MODULES is where `npm ci` installed package-lock.json's packages (crates/dashboard/build.rs
// installs them in Cargo's OUT_DIR, so that nothing is written in the source tree).
import { createRequire } from "node:module";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const args = process.argv.slice(2);
if (args.length !== 2) {
  console.error("usage: node build.mjs NODE_MODULES OUT");
  process.exit(2);
}
// Absolute, as createRequire needs (relative ones are from the current directory).
const [modules, out] = args.map((path) => resolve(path));
const require = createRequire(join(modules, "..", "package.json"));
const esbuild = require("esbuild");
const source = join(dirname(fileURLToPath(import.meta.url)), "src");

rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, "assets"), { recursive: true });
const result = await esbuild.build({
  entryPoints: [join(source, "main.js")],
  bundle: true,
  minify: true,
  format: "esm",
  target: ["chrome110", "firefox110", "safari16"],
  nodePaths: [modules],
  outdir: join(out, "assets"),
  entryNames: "[name]-[hash]",
  metafile: true,
  // The licences are written whole to assets/licenses.txt instead (below).
  legalComments: "none",
  logLevel: "warning",
});

// The licence of each package in the bundle, under a line naming it and its version.
const licenses = ["preact", "htm", "uplot"].map((name) => {
  const directory = join(modules, name);
  const { version } = JSON.parse(readFileSync(join(directory, "package.json"), "utf8"));
  const file = readdirSync(directory).find((entry) => /^licen[cs]e(\.(md|txt))?$/i.test(entry));
  if (!file) throw new Error(`no LICENSE file in ${directory}`);
  const heading = `${name} ${version}`;
  return `${heading}\n${"=".repeat(heading.length)}\n\n${readFileSync(join(directory, file), "utf8").trim()}\n`;
});
writeFileSync(join(out, "assets", "licenses.txt"), licenses.join("\n\n"));

const outputs = Object.keys(result.metafile.outputs).map((path) => basename(path));
const script = outputs.find((name) => name.endsWith(".js"));
const style = outputs.find((name) => name.endsWith(".css"));
writeFileSync(
  join(out, "index.html"),
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>trainctl</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/assets/${style}">
<script type="module" src="/assets/${script}"></script>
</head>
<body><div id="app"></div></body>
</html>
`,
);
