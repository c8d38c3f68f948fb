import { exposedLine, secretReadableByOthers } from "../../harnesses/exposed.ts";
import { applyHarnesses, checkHarnessConfigs, proveHookCommands } from "../../harnesses/apply.ts";
import { hookProgram } from "../../harnesses/command.ts";
import { checkRoutes, gatewayHarnesses, mcpLine, routeHarness } from "../../harnesses/gateway.ts";
import { checkShellHeaders, chooseUpstreams, upstreamLine } from "../../harnesses/upstreams.ts";
import { harnessList } from "../../harnesses/index.ts";
import { parse } from "../../lib/args.ts";
import { ExitError, UsageError } from "../../lib/errors.ts";
import { readHost, withHookSecret, writeHost } from "../../lib/state.ts";

export const USAGE = `usage: tacho reassign [--harness LIST] [--workspace ID] [--gateway | --no-gateway] [--json]

  --harness LIST   without --workspace: the harnesses this computer wraps from now on; the collector's
                   entries are removed from every harness left out (nothing else in its configuration
                   is touched). LIST may be "none".
  --workspace ID   files this computer under another workspace (on this computer only, for now);
                   --harness then only adds harnesses, as tacho enroll does
  --gateway        point every wrapped harness that can use it at the model gateway (a base URL of
                   your own in its settings or in this shell becomes this computer's upstream, as
                   with tacho enroll --gateway)
  --no-gateway     give every harness its own model settings back (tacho's are removed, nothing else)
  A harness left out of --harness stops going through the gateway too.`;

/**
 * Without --workspace, LIST becomes the set of wrapped harnesses: a harness left out has its
 * entries removed from its configuration (nothing else is touched). With --workspace the host
 * moves and LIST, when given, only adds (as enroll does).
 */
export async function reassign(args: string[]): Promise<number> {
  const { values, positionals } = parse("tacho reassign", args, {
    harness: { type: "string" },
    workspace: { type: "string" },
    gateway: { type: "boolean" },
    "no-gateway": { type: "boolean" },
    json: { type: "boolean", default: false },
  });
  if (positionals.length > 0) throw new UsageError(`tacho reassign: unexpected ${positionals.join(" ")}\n${USAGE}`);
  const gatewayFlag = values.gateway ? true : values["no-gateway"] ? false : undefined;
  if (values.gateway && values["no-gateway"]) throw new UsageError(`tacho reassign: --gateway or --no-gateway, not both\n${USAGE}`);
  if (values.harness === undefined && values.workspace === undefined && gatewayFlag === undefined)
    throw new UsageError(`tacho reassign: name --harness, --workspace, --gateway or --no-gateway\n${USAGE}`);
  const host = readHost();
  if (!host) throw new ExitError(1, "tacho reassign: this computer is not enrolled; run tacho enroll first");
  const named = values.harness === undefined || values.harness.trim() === "none" ? [] : harnessList(values.harness);

  const moving = values.workspace !== undefined && values.workspace !== host.workspace;
  const keep = values.workspace !== undefined || values.harness === undefined ? [...new Set([...host.harnesses, ...named])] : named;
  const dropped = host.harnesses.filter((h) => !keep.includes(h));
  const hook_command = hookProgram();
  checkHarnessConfigs([...keep, ...dropped], { ports: host.ports, hook_command });
  proveHookCommands({ ports: host.ports, hook_command }, keep);
  const routed = gatewayFlag === false ? [] : gatewayHarnesses(keep, host.gateway ?? [], gatewayFlag === true);
  const unroute = (host.gateway ?? []).filter((h) => !routed.includes(h));
  checkRoutes(host, routed, unroute);
  // Only a harness routed now for the first time has a base URL of the user's own left to find.
  const newly = routed.filter((h) => !(host.gateway ?? []).includes(h));
  checkShellHeaders("tacho reassign", newly);
  const upstreams = chooseUpstreams("tacho reassign", [], newly, host, host.upstreams);

  const next = withHookSecret({
    ...host,
    harnesses: keep,
    hook_command,
    gateway: routed,
    ...(upstreams.chosen ? { upstreams: upstreams.chosen } : {}),
    ...(values.workspace !== undefined ? { workspace: values.workspace } : {}),
  });
  writeHost(next);
  const removed = applyHarnesses(next, dropped, "remove");
  const applied = applyHarnesses(next, keep, "apply");
  const unrouted = unroute.map((h) => routeHarness(next, h, false)!);
  const routes = routed.map((h) => routeHarness(next, h, true)!);
  if (moving) {
    // The server has no route to move a host yet (docs/collector.md): the change is local only.
    process.stderr.write(
      `warning: workspace changed to ${values.workspace} on this computer only; the server still files this host under ${host.workspace} until it offers a move\n`,
    );
  }
  const exposed = secretReadableByOthers(next.hook_secret, applied, routes);
  if (values.json) {
    process.stdout.write(
      `${JSON.stringify({ host_id: next.host_id, workspace: next.workspace, moved: moving, server_told: false, harnesses: next.harnesses, removed, applied, gateway: { routed: routes, unrouted, upstreams: upstreams.said }, secret_readable_by_others: exposed }, null, 2)}\n`,
    );
  } else {
    const lines = [`host ${next.host_id} in workspace ${next.workspace}; wraps ${next.harnesses.join(", ") || "no harness"}`];
    for (const r of removed) lines.push(`${r.harness}: hooks ${r.changed ? "removed from" : "were not in"} ${r.config}`);
    for (const r of applied) {
      lines.push(`${r.harness}: hooks ${r.changed ? "written to" : "already in"} ${r.config}`);
      if (r.action) lines.push(`  ${r.action}`);
    }
    for (const r of unrouted)
      lines.push(
        `${r.harness}: model calls no longer through the gateway (${r.changed ? "settings given back in" : "were not in"} ${r.config})`,
      );
    for (const r of routes)
      lines.push(`${r.harness}: model calls through the gateway (${r.changed ? "set in" : "already in"} ${r.config})`);
    for (const line of [...unrouted.map((r) => mcpLine(r, false)), ...routes.map((r) => mcpLine(r, true))]) if (line) lines.push(line);
    for (const u of upstreams.said) lines.push(upstreamLine(u));
    for (const e of exposed) lines.push(exposedLine(e));
    process.stdout.write(`${lines.join("\n")}\n`);
  }
  return 0;
}
