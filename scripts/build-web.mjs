// Builds the dashboard into dist/web: web/main.ts (with the generated client,
// Connect and uPlot) bundled by esbuild into content-hashed assets, and
// web/index.html with those names filled in. Run by `npm run build` (and so by
// `npm ci`, through prepare), after `tsc -p web` has type-checked the page.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, "dist", "web");

// Old hashed files would otherwise pile up and be served forever.
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

const result = await build({
  absWorkingDir: root,
  entryPoints: ["web/main.ts"],
  bundle: true,
  format: "esm",
  target: ["es2022", "chrome111", "firefox111", "safari16"],
  minify: true,
  sourcemap: "linked",
  legalComments: "linked",
  outdir: join(out, "assets"),
  entryNames: "[name]-[hash]",
  assetNames: "[name]-[hash]",
  metafile: true,
  logLevel: "warning",
});

const outputs = Object.entries(result.metafile.outputs).filter(([, o]) => o.entryPoint === "web/main.ts" || o.cssBundle !== undefined);
const script = outputs.map(([file]) => file).find((file) => file.endsWith(".js"));
const style = outputs.map(([, o]) => o.cssBundle).find((file) => file !== undefined);
if (script === undefined || style === undefined) throw new Error("cannot build the dashboard: esbuild wrote no script or no stylesheet");

const template = readFileSync(join(root, "web", "index.html"), "utf8");
const tags =
  `<link rel="stylesheet" href="/assets/${basename(style)}">\n` +
  `    <script type="module" src="/assets/${basename(script)}"></script>`;
if (!template.includes("<!-- assets -->")) throw new Error("cannot build the dashboard: web/index.html lacks <!-- assets -->");
writeFileSync(join(out, "index.html"), template.replace("<!-- assets -->", tags));
