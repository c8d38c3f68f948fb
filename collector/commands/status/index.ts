import { existsSync, readFileSync } from "node:fs";
import { harnessHealth, type HarnessHealth } from "../../harnesses/health.ts";
import { parse } from "../../lib/args.ts";
import { UsageError } from "../../lib/errors.ts";
import { type HostConfig, readHost, statePath } from "../../lib/state.ts";
import { useNodeCrypto } from "../../lib/node-crypto.ts";
import { readPolicyFile } from "../../recorder/policy-cache.ts";
import { renderStops, type Stops, stopsHere } from "./stops.ts";
import { recorderLaunch } from "../../lib/recorder-process.ts";
import { serviceFile } from "../daemon/service.ts";
import { mcpServerNow, routedNow } from "../../harnesses/gateway.ts";
import { daemonState, type DaemonState, type RecorderSummary } from "./daemon.ts";
import { serverView } from "./server.ts";

export const USAGE = `usage: tacho status [--json] [--offline]

The enrollment; for each wrapped harness, whether its hooks are there, whether each hook command
runs (it is run once, from a shell with an empty PATH, recording nothing), and whether the harness
lets them run (disabled, not trusted), with the fix; the recorder and its login service; what is
pending and spooled; the cached policy and the operator's stops in it that apply here (a paused run
or agent, this computer suspended, an exhausted budget); the gateway and this computer's own
upstreams; and, unless --offline, how the server sees this computer.

  --offline   do not ask the server
  --json      print all of it as JSON`;

export async function status(args: string[]): Promise<number> {
  const { values, positionals } = parse("tacho status", args, {
    json: { type: "boolean", default: false },
    offline: { type: "boolean", default: false },
  });
  if (positionals.length > 0) throw new UsageError(`tacho status: unexpected ${positionals.join(" ")}\n${USAGE}`);
  const host = readHost();
  if (!host) {
    if (values.json) process.stdout.write(`${JSON.stringify({ enrolled: false, state_dir: statePath() }, null, 2)}\n`);
    else process.stdout.write(`not enrolled (state directory ${statePath()}); run tacho enroll\n`);
    return 1;
  }
  const harnesses = host.harnesses.map((name) => harnessHealth(host, name));
  const daemon = await daemonState(host);
  const unit = serviceFile(recorderLaunch());
  const service = unit ? { kind: unit.kind, name: unit.name, path: unit.path, installed: existsSync(unit.path) } : null;
  const spool = { events: countLines(statePath("spool", "events.jsonl")), dropped: readCount(statePath("spool", "dropped")) };
  const policy = policyFile();
  useNodeCrypto();
  const stops = stopsHere(host, readPolicyFile(host)?.policy ?? null, Date.now());
  const gateway = {
    port: host.ports.gateway,
    routed: (host.gateway ?? []).map((h) => ({ harness: h, configured: routedNow(host, h) })),
    // The workspace's tools as each routed harness's MCP server `oxagen`: whether its entry is there.
    mcp_servers: (host.gateway ?? []).flatMap((h) => {
      const present = mcpServerNow(host, h);
      return present === null ? [] : [{ harness: h, present }];
    }),
    upstreams: host.upstreams ?? {},
    recorder: daemon.recorder?.gateway ?? null,
  };
  const server = values.offline ? null : await serverView(host);
  const out = {
    enrolled: true,
    host_id: host.host_id,
    workspace: host.workspace,
    server: host.server,
    server_key_id: host.server_key.key_id,
    enrolled_ms: host.enrolled_ms,
    ports: host.ports,
    harnesses,
    daemon,
    service,
    spool,
    policy,
    stops,
    gateway,
    server_view: server,
  };
  process.stdout.write(values.json ? `${JSON.stringify(out, null, 2)}\n` : render(out, daemon));
  return 0;
}

function countLines(path: string): number {
  try {
    return readFileSync(path, "utf8")
      .split("\n")
      .filter((l) => l.trim()).length;
  } catch {
    return 0;
  }
}

function readCount(path: string): number {
  try {
    return Number.parseInt(readFileSync(path, "utf8"), 10) || 0;
  } catch {
    return 0;
  }
}

function policyFile(): { etag: string | null; fetched_ms: number | null } | null {
  try {
    const raw = JSON.parse(readFileSync(statePath("policy.json"), "utf8")) as { etag?: unknown; fetched_ms?: unknown };
    return { etag: typeof raw.etag === "string" ? raw.etag : null, fetched_ms: typeof raw.fetched_ms === "number" ? raw.fetched_ms : null };
  } catch {
    return null;
  }
}

function when(ms: number | null | undefined): string {
  return typeof ms === "number" ? new Date(ms).toISOString() : "unknown";
}

function render(
  o: {
    host_id: string;
    workspace: string;
    server: string;
    harnesses: HarnessHealth[];
    service: { name: string; path: string; installed: boolean } | null;
    spool: { events: number; dropped: number };
    policy: { etag: string | null; fetched_ms: number | null } | null;
    stops: Stops;
    gateway: {
      port: number;
      routed: { harness: string; configured: boolean }[];
      mcp_servers: { harness: string; present: boolean }[];
      upstreams: NonNullable<HostConfig["upstreams"]>;
      recorder: RecorderSummary["gateway"];
    };
    server_view: Awaited<ReturnType<typeof serverView>> | null;
  },
  d: DaemonState,
): string {
  const lines = [`host ${o.host_id} in workspace ${o.workspace} (${o.server})`];
  if (o.harnesses.length === 0) lines.push("harnesses: none wrapped");
  for (const h of o.harnesses) {
    const detail = [
      h.missing?.length ? `missing: ${h.missing.join(", ")}` : "",
      h.altered?.length ? `altered: ${h.altered.join(", ")}` : "",
      h.problem ?? "",
    ]
      .filter(Boolean)
      .join("; ");
    lines.push(`${h.harness}: hooks ${h.hooks}${detail ? ` (${detail})` : ""} in ${h.config || "?"}`);
    for (const p of h.problems ?? []) lines.push(`  ${p.state}: ${p.detail}`, `  fix: ${p.fix}`);
  }
  lines.push(`recorder: ${d.state}${d.pid ? ` (pid ${d.pid})` : ""}, port ${d.port} ${d.answering ? "answering" : "not answering"}`);
  if (d.ports?.hooks)
    lines.push(
      `  CANNOT LISTEN on its hook port 127.0.0.1:${d.port}: ${d.ports.hooks}; Claude Code's tool results are not received (pick another: tacho enroll --hooks-port N)`,
    );
  if (d.ports?.gateway) lines.push(`  CANNOT LISTEN on its gateway port: ${d.ports.gateway} (pick another: tacho enroll --gateway-port N)`);
  if (o.service)
    lines.push(`login service: ${o.service.installed ? `installed (${o.service.path})` : "not installed (tacho daemon install)"}`);
  if (d.recorder) {
    const p = d.recorder.pending;
    lines.push(
      `pending: ${p ? `${p.frames} frames, ${p.locks} locks, ${p.bodies} bodies, ${p.spooled} spooled events` : "unknown"}; last delivery ${when(d.recorder.last_delivery_ms)}${d.recorder.last_error ? `; last error: ${d.recorder.last_error}` : ""}`,
    );
  } else {
    lines.push("pending: unknown; last delivery unknown");
  }
  const g = o.gateway;
  const routes = g.routed.map((r) => `${r.harness}${r.configured ? "" : " (setting missing: run tacho enroll --gateway)"}`).join(", ");
  lines.push(
    `gateway: 127.0.0.1:${g.port} ${g.recorder?.listening ?? "unknown (recorder not running)"}; model calls of ${routes || "no harness (tacho enroll --gateway)"}`,
  );
  const tools = g.mcp_servers;
  if (tools.length)
    lines.push(
      `  workspace tools (MCP server oxagen at 127.0.0.1:${g.port}/mcp) for ${tools.map((r) => `${r.harness}${r.present ? "" : " (entry missing: run tacho enroll --gateway)"}`).join(", ")}`,
    );
  for (const [vendor, u] of Object.entries(g.upstreams))
    lines.push(`  ${vendor} calls go on to ${u.url} (this computer's own upstream, from ${u.from})`);
  if (g.recorder)
    lines.push(
      `  carried ${g.recorder.carried} calls (${g.recorder.client_closed} closed by the client), refused ${g.recorder.refused}, answered itself ${g.recorder.answered}; last call ${when(g.recorder.last_call_ms)}${g.recorder.last_error ? `; last error ${when(g.recorder.last_error.t)}: ${g.recorder.last_error.message}` : ""}`,
    );
  const m = g.recorder?.mcp;
  if (m)
    lines.push(
      `  tool calls carried ${m.calls}, refused by the server ${m.refused}, catalogs not verified ${m.catalog_unverified}, answered itself ${m.answered}; last call ${when(m.last_call_ms)}${m.last_error ? `; last error ${when(m.last_error.t)}: ${m.last_error.message}` : ""}`,
    );
  lines.push(`spooled: ${o.spool.events} events${o.spool.dropped ? `, ${o.spool.dropped} dropped` : ""}`);
  lines.push(`policy: ${o.policy ? `cached ${o.policy.etag ?? "?"} at ${when(o.policy.fetched_ms)}` : "not cached"}`);
  lines.push(...renderStops(o.stops));
  if (o.server_view) {
    if ("error" in o.server_view) lines.push(`server: ${o.server_view.error}`);
    else for (const a of o.server_view.agents) lines.push(`server sees ${a.name}: ${a.health}${a.reason ? ` (${a.reason})` : ""}`);
  }
  return `${lines.join("\n")}\n`;
}
