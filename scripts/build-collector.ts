// `npm run build` (and `npm install`): the collector as an installable package,
// dist/oxagen-collector-<version>.tgz (bins `tacho` and `oxagen`, plain JavaScript, no dependency
// beyond Node 22.18), which a developer installs with `npm install -g ./dist/oxagen-collector-<version>.tgz`.
// Also dist/tacho.mjs, the bundle `tacho daemon start` runs in this repo when it is newer than every source.
//
// The package keeps the collector's own layout for the files that load before anything else
// (bin/, the hook's client commands/hook/client.cjs, the harnesses' answer rules, lib/channel.cjs and
// lib/harness-pid.js), so their relative paths hold; everything else is bundled
// into dist/ (one level down, like collector/lib/, so collector/lib/self.ts finds bin/ from either).
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { build, type BuildOptions, type Plugin } from "esbuild";
import { HARNESSES } from "../protocol/ids.ts";

const root = join(import.meta.dirname, "..");
// --out DIR builds elsewhere (tests build their own copy, so they never race on dist/).
// --readable keeps names and lines (a CPU profile of the bundle then names its functions: bench:gateway's BENCH_CPU_PROF).
const args = parseArgs({ options: { out: { type: "string" }, readable: { type: "boolean" } } }).values;
const out = resolve(args.out ?? join(root, "dist"));
const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };
const PACKAGE = `oxagen-collector-${version}.tgz`;

// jsonc-parser's "main" is a UMD build whose dynamic requires an ESM bundle cannot hold: take its ESM build.
const common: BuildOptions = {
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node22",
  mainFields: ["module", "main"],
  minify: !args.readable,
  legalComments: "none",
  logLevel: "warning",
};

/** A source file's text with each [from, to] replaced exactly once; a build error when one is not found. */
function rewritten(path: string, swaps: [string, string][]): string {
  let text = readFileSync(join(root, path), "utf8");
  for (const [from, to] of swaps) {
    if (text.split(from).length !== 2) throw new Error(`build-collector: expected ${JSON.stringify(from)} once in ${path}`);
    text = text.replace(from, to);
  }
  return text;
}

// A worker is its own entry beside the bundle that starts it; its source names it by its .ts path.
const workerUrl = (source: RegExp, worker: string, file: string): Plugin => ({
  name: `worker-url-${file}`,
  setup(b) {
    b.onLoad({ filter: source }, (args) => ({
      contents: rewritten(args.path.slice(root.length + 1), [
        [`new URL("./${worker}", import.meta.url)`, `new URL("./${file}", import.meta.url)`],
      ]),
      loader: "ts",
    }));
  },
});
const verifyWorkerUrl = workerUrl(/commands[/\\]verify[/\\]parallel\.ts$/, "worker.ts", "verify-worker.js");
const gatewayWorkerUrl = (file: string) => workerUrl(/gateway[/\\]model[/\\]offload\.ts$/, "body-worker.ts", file);

await build({
  ...common,
  entryPoints: [join(root, "collector/gateway/model/body-worker.ts")],
  outfile: join(out, "tacho-gateway-worker.mjs"),
});
await build({
  ...common,
  entryPoints: [join(root, "collector/entry.ts")],
  outfile: join(out, "tacho.mjs"),
  plugins: [gatewayWorkerUrl("tacho-gateway-worker.mjs")],
});

const pkg = join(out, "oxagen-collector");
rmSync(pkg, { recursive: true, force: true });
await build({
  entryPoints: {
    main: join(root, "collector/main.ts"),
    offline: join(root, "collector/commands/hook/offline.ts"),
    oversize: join(root, "collector/commands/hook/oversize.ts"),
    "verify-worker": join(root, "collector/commands/verify/worker.ts"),
    "gateway-worker": join(root, "collector/gateway/model/body-worker.ts"),
  },
  ...common,
  outdir: join(pkg, "dist"),
  chunkNames: "chunk-[hash]",
  splitting: true,
  plugins: [verifyWorkerUrl, gatewayWorkerUrl("gateway-worker.js")],
});

const files: Record<string, string> = {
  "bin/tacho.js": rewritten("collector/bin/tacho.js", [['import("../main.ts")', 'import("../dist/main.js")']]),
  "bin/oxagen.js": rewritten("collector/bin/oxagen.js", [['import("../main.ts")', 'import("../dist/main.js")']]),
  "commands/hook/client.cjs": rewritten("collector/commands/hook/client.cjs", [
    ['import("./offline.ts")', 'import("../../dist/offline.js")'],
    ['import("./oversize.ts")', 'import("../../dist/oversize.js")'],
  ]),
};
for (const [path, text] of Object.entries(files)) {
  mkdirSync(join(pkg, path, ".."), { recursive: true });
  writeFileSync(join(pkg, path), text, { mode: path.startsWith("bin/") ? 0o755 : 0o644 });
}
const plain = [
  "bin/package.json",
  "bin/preflight.cjs",
  "harnesses/answers.cjs",
  ...HARNESSES.map((h) => `harnesses/${h}/answer.cjs`),
  "lib/channel.cjs",
  "lib/harness-pid.js",
];
for (const path of plain) {
  mkdirSync(join(pkg, path, ".."), { recursive: true });
  copyFileSync(join(root, "collector", path), join(pkg, path));
}
writeFileSync(
  join(pkg, "package.json"),
  `${JSON.stringify(
    {
      name: "oxagen-collector",
      version,
      description:
        "The Oxagen collector: tacho (enroll, status, hook, daemon) and oxagen (verify, agent) for a computer whose AI coding agents Oxagen records.",
      license: "UNLICENSED",
      type: "module",
      bin: { tacho: "bin/tacho.js", oxagen: "bin/oxagen.js" },
      engines: { node: ">=22.18" },
    },
    null,
    2,
  )}\n`,
);
writeFileSync(
  join(pkg, "README.md"),
  `# oxagen-collector ${version}

\`tacho\` and \`oxagen\`, the Oxagen collector. Needs Node.js 22.18 or later; nothing else.

    tacho enroll --server URL --token TOKEN --harness claude-code   # enroll, wrap Claude Code, start the recorder
    tacho status                                                     # is everything in place and running?
    tacho daemon install                                             # start the recorder at every login
    oxagen verify BUNDLE --server-key KEY                            # check an export bundle offline

Every command takes --help.
`,
);

// npm pack is the ordinary way to make the archive npm installs; it runs no script of ours.
const npm = process.env.npm_execpath;
const packed = spawnSync(npm ? process.execPath : "npm", [...(npm ? [npm] : []), "pack", pkg, "--pack-destination", out, "--silent"], {
  encoding: "utf8",
  env: { ...process.env, npm_config_loglevel: "error" },
});
if (packed.status !== 0) throw new Error(`npm pack failed: ${packed.stderr || packed.error?.message}`);
const name = packed.stdout.trim().split("\n").at(-1);
if (name !== PACKAGE) throw new Error(`npm pack wrote ${name}, expected ${PACKAGE}`);
process.stdout.write(`built ${join(out, PACKAGE)} (install: npm install -g ${join(out, PACKAGE)}) and ${join(out, "tacho.mjs")}\n`);
