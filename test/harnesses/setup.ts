// Installs the real harness CLIs (test/harnesses/package.json, about 760 MB) with `npm ci` the first
// time the harness tests run, and again whenever package-lock.json changes; a newcomer's root
// `npm install` never pulls them.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const dir = import.meta.dirname;
const stamp = join(dir, "node_modules", ".oxagen-lock-sha256");

export default function setup(): void {
  const want = createHash("sha256")
    .update(readFileSync(join(dir, "package-lock.json")))
    .digest("hex");
  const bins = ["claude", "codex"].every((b) => existsSync(join(dir, "node_modules", ".bin", b)));
  if (bins && existsSync(stamp) && readFileSync(stamp, "utf8").trim() === want) return;
  const started = Date.now();
  process.stdout.write("test/harnesses: installing the Claude Code and Codex CLIs (npm ci, about 760 MB, once) …\n");
  const r = spawnSync("npm", ["ci", "--no-audit", "--no-fund"], {
    cwd: dir,
    encoding: "utf8",
    env: { ...process.env, npm_config_loglevel: "error" },
  });
  if (r.status !== 0) throw new Error(`npm ci in test/harnesses failed (exit ${r.status}): ${r.stderr}${r.error?.message ?? ""}`);
  writeFileSync(stamp, `${want}\n`);
  process.stdout.write(`test/harnesses: installed in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
}
