// Builds the run viewer into internal/web/assets: app.js and app.css
// bundled by esbuild from src/, index.html copied, and manifest.json with
// the hash of the sources it was built from (TestAssetsFresh recomputes
// it). Run it with `make web`.
import * as esbuild from "esbuild";
import { createHash } from "node:crypto";
import { copyFileSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "..", "internal", "web", "assets");

await esbuild.build({
  entryPoints: { app: join(here, "src", "main.jsx") },
  bundle: true,
  minify: true,
  format: "iife",
  target: ["chrome110", "firefox115", "safari16"],
  jsx: "automatic",
  jsxImportSource: "preact",
  outdir: out,
  legalComments: "none",
  logLevel: "warning",
});
copyFileSync(join(here, "src", "index.html"), join(out, "index.html"));

// The hash of the sources: every file of src/, the build script and the
// package files, by path relative to web/, in byte order of the paths.
function files(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? files(p) : [p];
  });
}
const inputs = [...files(join(here, "src")), join(here, "build.mjs"), join(here, "package.json"), join(here, "package-lock.json")]
  .map((p) => relative(here, p).split("\\").join("/"))
  .sort((a, b) => (Buffer.from(a) < Buffer.from(b) ? -1 : Buffer.from(a) > Buffer.from(b) ? 1 : 0));
const h = createHash("sha256");
for (const p of inputs) {
  h.update(p + "\0");
  h.update(readFileSync(join(here, p)));
  h.update("\0");
}
writeFileSync(join(out, "manifest.json"), JSON.stringify({ sources: h.digest("hex"), files: inputs }, null, 2) + "\n");
