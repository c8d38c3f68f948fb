import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const BUNDLE = join(ROOT, "dist/tacho.mjs");

function newest(dir: string): number {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) latest = Math.max(latest, newest(path));
    else if (/\.(?:ts|js)$/.test(entry.name)) latest = Math.max(latest, statSync(path).mtimeMs);
  }
  return latest;
}

/** The built bundle when it is at least as new as every collector and protocol source; else null. */
export function freshBundle(): string | null {
  try {
    const built = statSync(BUNDLE).mtimeMs;
    return built >= Math.max(newest(join(ROOT, "collector")), newest(join(ROOT, "protocol"))) ? BUNDLE : null;
  } catch {
    return null;
  }
}
