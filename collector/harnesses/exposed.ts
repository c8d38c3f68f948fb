import { readFileSync, statSync } from "node:fs";
import { dirname } from "node:path";
import type { GatewayResult } from "./gateway.ts";

/** A file tacho wrote the enrollment's secret into that another user of this computer can read. */
export interface Exposed {
  path: string;
  /** Its permission bits, octal (`0644`). */
  mode: string;
}

/**
 * The files an enroll or reassign wrote (hook configs, gateway routes and their MCP entries) that
 * hold `secret` (the header every hook and gateway call carries) and that another user can read:
 * readable by group or others, and every folder above it enterable by them. tacho never changes a
 * file's mode the user chose; it says so and how to close it.
 */
export function secretReadableByOthers(secret: string | undefined, hooks: { config: string }[], routes: GatewayResult[]): Exposed[] {
  if (!secret || process.platform === "win32") return [];
  const paths = [...hooks.map((r) => r.config), ...routes.flatMap((r) => [r.config, ...(r.mcp ? [r.mcp.config] : [])])];
  const out: Exposed[] = [];
  for (const path of new Set(paths)) {
    try {
      const mode = statSync(path).mode & 0o777;
      if (!readFileSync(path, "utf8").includes(secret)) continue;
      if (reachable(path, mode, 0o004, 0o001) || reachable(path, mode, 0o040, 0o010))
        out.push({ path, mode: `0${mode.toString(8).padStart(3, "0")}` });
    } catch {
      // Gone or unreadable to us: nothing to say of it.
    }
  }
  return out;
}

function reachable(path: string, mode: number, read: number, enter: number): boolean {
  if ((mode & read) === 0) return false;
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    if ((statSync(dir).mode & enter) === 0) return false;
    if (dirname(dir) === dir) return true;
  }
}

/** The warning for one such file. */
export function exposedLine(e: Exposed): string {
  return `warning: ${e.path} (mode ${e.mode}) can be read by other users of this computer, and it now holds this enrollment's secret (the header its hooks and gateway calls carry): chmod 600 ${e.path}`;
}
