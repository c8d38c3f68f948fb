import { rmSync } from "node:fs";
import { applyHarnesses, checkHarnessConfigs, type HarnessResult } from "../../harnesses/apply.ts";
import { checkRoutes, mcpLine, routeHarness } from "../../harnesses/gateway.ts";
import { forgetAll } from "../../harnesses/originals.ts";
import { parse } from "../../lib/args.ts";
import { ExitError, UsageError } from "../../lib/errors.ts";
import { useNodeCrypto } from "../../lib/node-crypto.ts";
import { unenrollOnServer } from "../../lib/server.ts";
import { HOST_STATE, RECORDER_FILES, readHost, removeStateDir, statePath } from "../../lib/state.ts";
import { removeService } from "../daemon/service.ts";
import { requireRecorderStopped } from "../../lib/stopped.ts";
import { pendingCount, undelivered } from "../../recorder/undelivered.ts";

export const USAGE = `usage: tacho unenroll [--force] [--json]

Removes this computer from its workspace: the server stops taking its key, every harness's
configuration gets back exactly what it held before tacho enroll (hooks, model settings such as
ANTHROPIC_BASE_URL, files and directories enroll created), the login service (tacho daemon install)
is removed, and the state directory goes: the enrollment (host.json with its secret key), the cached
policy, the journal, the spool and the recorder's log. Stop the recorder first
(tacho daemon stop). It refuses while anything recorded is not delivered yet.

  --force  unenroll anyway: drop what is not delivered, and go on when the server cannot be told
  --json   print what was removed as JSON`;

/**
 * Unenrolls this computer: the server stops taking its key, the hook entries leave every wrapped
 * harness's configuration, and the enrollment (host.json with its secret key), the cached policy,
 * the journal and the spool are removed. Refuses while anything recorded is undelivered, unless
 * --force.
 */
export async function unenroll(args: string[]): Promise<number> {
  const { values, positionals } = parse("tacho unenroll", args, {
    force: { type: "boolean", default: false },
    json: { type: "boolean", default: false },
  });
  if (positionals.length > 0) throw new UsageError(`tacho unenroll: unexpected ${positionals.join(" ")}\n${USAGE}`);
  const host = readHost();
  if (!host) throw new ExitError(1, "tacho unenroll: this computer is not enrolled");
  requireRecorderStopped("tacho unenroll", "then run tacho unenroll again");
  const left = undelivered();
  const pending = pendingCount(left);
  if (pending > 0 && !values.force)
    throw new ExitError(
      1,
      `tacho unenroll: ${left.frames} frames, ${left.locks} locks, ${left.bodies} bodies and ${left.spooled} spooled events are not delivered yet; ` +
        "start the recorder (tacho daemon start) to deliver them, or pass --force to drop them",
    );
  // Every configuration is read and its old text planned before the server is told: a broken file stops here.
  checkHarnessConfigs(host.harnesses, host);
  checkRoutes(host, [], host.gateway ?? []);
  useNodeCrypto();
  const server = await unenrollOnServer(host);
  if (typeof server === "object" && !values.force)
    throw new ExitError(
      1,
      `tacho unenroll: the server was not told (${server.error}); nothing was changed. Pass --force to unenroll here anyway, then remove host ${host.host_id} in the console`,
    );
  const unrouted = (host.gateway ?? []).map((h) => routeHarness(host, h, false)!);
  const removed: HarnessResult[] = applyHarnesses(host, host.harnesses, "remove");
  forgetAll();
  const service = removeService();
  for (const name of ["host.json", ...HOST_STATE, ...RECORDER_FILES]) rmSync(statePath(name), { recursive: true, force: true });
  const stateGone = removeStateDir();
  const told = typeof server === "object" ? `not told: ${server.error}` : server;
  if (values.json) {
    process.stdout.write(
      `${JSON.stringify({ host_id: host.host_id, server: told, dropped: pending, removed, unrouted, service: service && { path: service.file.path, ...(service.failed ? { warning: service.failed } : {}) }, state_dir: { path: statePath(), removed: stateGone } }, null, 2)}\n`,
    );
  } else {
    const lines = [`unenrolled ${host.host_id} (server: ${told})`];
    for (const r of unrouted) {
      lines.push(
        `${r.harness}: model calls no longer through the gateway (${r.changed ? "settings given back in" : "were not in"} ${r.config})`,
      );
      const mcp = mcpLine(r, false);
      if (mcp) lines.push(mcp);
    }
    for (const r of removed) lines.push(`${r.harness}: hooks ${r.changed ? "removed from" : "were not in"} ${r.config}`);
    if (service)
      lines.push(
        `login service ${service.file.name} removed (${service.file.path})${service.failed ? `; unloading it said: ${service.failed}` : ""}`,
      );
    lines.push(
      stateGone ? `state directory ${statePath()} removed` : `state directory ${statePath()} kept: it holds files tacho did not write`,
    );
    if (pending > 0) lines.push(`dropped ${pending} undelivered items (--force)`);
    process.stdout.write(`${lines.join("\n")}\n`);
  }
  return 0;
}
