import { readFileSync } from "node:fs";
import { readWrites } from "../../harnesses/apply.ts";
import { adapterFor } from "../../harnesses/index.ts";
import { hookState, readConfig } from "../../harnesses/settings.ts";
import { parse } from "../../lib/args.ts";
import { ExitError, UsageError } from "../../lib/errors.ts";
import { readHost, statePath, type HostConfig } from "../../lib/state.ts";
import { daemonState, type DaemonState } from "./daemon.ts";
import { serverView } from "./server.ts";

interface HarnessStatus {
  harness: string;
  config: string;
  hooks: "present" | "missing" | "altered" | "unreadable";
  missing?: string[];
  altered?: string[];
  problem?: string;
  /** Set while the user still has to act on hooks written or changed (Codex: review and trust them). */
  action?: string;
}

export async function status(args: string[]): Promise<number> {
  const { values, positionals } = parse("tacho status", args, {
    json: { type: "boolean", default: false },
    offline: { type: "boolean", default: false },
  });
  if (positionals.length > 0) throw new UsageError("usage: tacho status [--json] [--offline]");
  const host = readHost();
  if (!host) {
    if (values.json) process.stdout.write(`${JSON.stringify({ enrolled: false, state_dir: statePath() }, null, 2)}\n`);
    else process.stdout.write(`not enrolled (state directory ${statePath()}); run tacho enroll\n`);
    return 1;
  }
  const seen = harnessSeen();
  const writes = readWrites();
  const harnesses = host.harnesses.map((name) => harnessStatus(host, name, writes[name], seen[name]));
  const daemon = await daemonState(host);
  const spool = { events: countLines(statePath("spool", "events.jsonl")), dropped: readCount(statePath("spool", "dropped")) };
  const policy = policyFile();
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
    spool,
    policy,
    server_view: server,
  };
  process.stdout.write(values.json ? `${JSON.stringify(out, null, 2)}\n` : render(out, daemon));
  return 0;
}

/** When each harness's hooks last reached the recorder (recorder-status.json). */
function harnessSeen(): Record<string, number> {
  try {
    const raw = JSON.parse(readFileSync(statePath("recorder-status.json"), "utf8")) as { harness_seen_ms?: Record<string, number> };
    return raw.harness_seen_ms && typeof raw.harness_seen_ms === "object" ? raw.harness_seen_ms : {};
  } catch {
    return {};
  }
}

function harnessStatus(host: HostConfig, name: string, writtenMs: number | undefined, seenMs: number | undefined): HarnessStatus {
  try {
    const adapter = adapterFor(name);
    const file = readConfig(adapter);
    const s = hookState(file.json, adapter, adapter.entries(host));
    // A hook event after the write shows the harness runs the new hooks (for Codex: they were trusted).
    const pending = adapter.afterWrite && writtenMs !== undefined && (seenMs === undefined || seenMs < writtenMs);
    return {
      harness: name,
      config: file.path,
      hooks: s.state,
      ...(s.missing.length ? { missing: s.missing } : {}),
      ...(s.altered.length ? { altered: s.altered } : {}),
      ...(pending ? { action: adapter.afterWrite } : {}),
    };
  } catch (err) {
    if (!(err instanceof ExitError)) throw err;
    return { harness: name, config: "", hooks: "unreadable", problem: err.message };
  }
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
    harnesses: HarnessStatus[];
    spool: { events: number; dropped: number };
    policy: { etag: string | null; fetched_ms: number | null } | null;
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
    if (h.action) lines.push(`  ${h.action}`);
  }
  lines.push(`recorder: ${d.state}${d.pid ? ` (pid ${d.pid})` : ""}, port ${d.port} ${d.answering ? "answering" : "not answering"}`);
  if (d.recorder) {
    const p = d.recorder.pending;
    lines.push(
      `pending: ${p ? `${p.frames} frames, ${p.locks} locks, ${p.bodies} bodies, ${p.spooled} spooled events` : "unknown"}; last delivery ${when(d.recorder.last_delivery_ms)}${d.recorder.last_error ? `; last error: ${d.recorder.last_error}` : ""}`,
    );
  } else {
    lines.push("pending: unknown; last delivery unknown");
  }
  lines.push(`spooled: ${o.spool.events} events${o.spool.dropped ? `, ${o.spool.dropped} dropped` : ""}`);
  lines.push(`policy: ${o.policy ? `cached ${o.policy.etag ?? "?"} at ${when(o.policy.fetched_ms)}` : "not cached"}`);
  if (o.server_view) {
    if ("error" in o.server_view) lines.push(`server: ${o.server_view.error}`);
    else for (const a of o.server_view.agents) lines.push(`server sees ${a.name}: ${a.health}${a.reason ? ` (${a.reason})` : ""}`);
  }
  return `${lines.join("\n")}\n`;
}
