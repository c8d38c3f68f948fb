// Bundles the collector into dist/tacho.mjs (plain JavaScript, Node 20+). `tacho daemon start`
// runs the recorder from it when it is newer than every source file. Run by `npm install`.
import { build } from "esbuild";
import { join } from "node:path";

const root = join(import.meta.dirname, "..");
await build({
  entryPoints: [join(root, "collector/entry.ts")],
  outfile: join(root, "dist/tacho.mjs"),
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  minify: true,
  legalComments: "none",
  logLevel: "warning",
});
process.stdout.write("built dist/tacho.mjs\n");
