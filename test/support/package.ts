// The collector as a user gets it: `npm run build`'s archive, installed with `npm install -g`
// into a temporary prefix. Each caller builds its own copy, so tests never race on dist/.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "./recorder.ts";

export interface Installed {
  /** The npm prefix it is installed under. */
  prefix: string;
  tgz: string;
  /** `<prefix>/bin/tacho` and `<prefix>/bin/oxagen` (symlinks, as npm makes them). */
  tacho: string;
  oxagen: string;
  /** The installed package's directory. */
  dir: string;
}

function npm(args: string[], cwd = ROOT): void {
  const r = spawnSync("npm", args, { cwd, encoding: "utf8", env: { ...process.env, npm_config_loglevel: "error" } });
  if (r.status !== 0) throw new Error(`npm ${args.join(" ")} failed: ${r.stderr}${r.error?.message ?? ""}`);
}

/** Builds the package (scripts/build-collector.ts) and installs it globally into a fresh prefix. */
export function installCollector(): Installed {
  const out = mkdtempSync(join(tmpdir(), "oxagen-build-"));
  const built = spawnSync(process.execPath, [join(ROOT, "scripts/build-collector.ts"), "--out", out], { cwd: ROOT, encoding: "utf8" });
  if (built.status !== 0) throw new Error(`build failed: ${built.stderr}`);
  const { version } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string };
  const tgz = join(out, `oxagen-collector-${version}.tgz`);
  const prefix = mkdtempSync(join(tmpdir(), "oxagen-prefix-"));
  npm(["install", "-g", "--prefix", prefix, "--no-audit", "--no-fund", tgz]);
  const tacho = join(prefix, "bin", "tacho");
  return {
    prefix,
    tgz,
    tacho,
    oxagen: join(prefix, "bin", "oxagen"),
    dir: realpathSync(join(prefix, "lib", "node_modules", "oxagen-collector")),
  };
}
