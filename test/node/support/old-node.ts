import { spawnSync } from "node:child_process";

/**
 * A Node older than the collector needs (this machine's own, e.g. /usr/bin/node 20), found on the
 * PATH outside node_modules; null when there is none (then the tests that need one are skipped).
 */
export function oldNode(): { path: string; version: string } | null {
  const which = spawnSync("sh", ["-c", "which -a node"], { encoding: "utf8" });
  for (const path of new Set((which.stdout ?? "").split("\n").filter(Boolean))) {
    const v = spawnSync(path, ["-p", "process.versions.node"], { encoding: "utf8" }).stdout?.trim();
    if (!v) continue;
    const [major, minor] = v.split(".").map(Number) as [number, number];
    if (major < 22 || (major === 22 && minor < 18)) return { path, version: v };
  }
  return null;
}
