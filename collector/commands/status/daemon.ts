import { readFileSync } from "node:fs";
import { connect } from "node:net";
import type { McpStats } from "../../gateway/mcp/rpc.ts";
import type { HostConfig } from "../../lib/state.ts";
import { alive, readPid } from "../../lib/pid.ts";
import { recorderHealth } from "../../lib/recorder-process.ts";
import { statePath } from "../../lib/state.ts";

/** What recorder-status.json says (written by the recorder; see collector/daemon/status.ts). */
export interface RecorderSummary {
  heartbeat_ms: number | null;
  pending: { frames: number; locks: number; bodies: number; spooled: number } | null;
  sessions_open: number | null;
  last_delivery_ms: number | null;
  last_error: string | null;
  /** The model gateway as the recorder last wrote it (see collector/daemon/status.ts). */
  gateway: {
    listening: string;
    carried: number;
    refused: number;
    answered: number;
    client_closed: number;
    last_call_ms: number | null;
    last_error: { t: number; message: string } | null;
    /** Its MCP side: the workspace's tools. */
    mcp: McpStats | null;
  } | null;
}

/** The recorder as seen from outside: its pid file, whether that process lives, and whether the hook port answers. */
export interface DaemonState {
  state: "running" | "stopped" | "not answering" | "unknown process on port";
  pid: number | null;
  alive: boolean;
  port: number;
  answering: boolean;
  /** Why the running recorder cannot listen on its hook or gateway port (null: it listens, or is not running). */
  ports: { hooks: string | null; gateway: string | null } | null;
  recorder: RecorderSummary | null;
}

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    const done = (ok: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), 1000);
    socket.on("connect", () => done(true));
    socket.on("error", () => done(false));
  });
}

function summary(): RecorderSummary | null {
  try {
    const raw = JSON.parse(readFileSync(statePath("recorder-status.json"), "utf8")) as Record<string, unknown>;
    const num = (v: unknown) => (typeof v === "number" ? v : null);
    const p = raw.pending as RecorderSummary["pending"] | undefined;
    return {
      heartbeat_ms: num(raw.heartbeat_ms),
      pending:
        p && typeof p === "object"
          ? { frames: Number(p.frames) || 0, locks: Number(p.locks) || 0, bodies: Number(p.bodies) || 0, spooled: Number(p.spooled) || 0 }
          : null,
      sessions_open: num(raw.sessions_open),
      last_delivery_ms: num(raw.last_delivery_ms),
      last_error: typeof raw.last_error === "string" ? raw.last_error : null,
      gateway: gatewayOf(raw.gateway),
    };
  } catch {
    return null;
  }
}

export async function daemonState(host: HostConfig): Promise<DaemonState> {
  const pid = readPid();
  const isAlive = pid !== null && alive(pid);
  // Answering means on this enrollment's own socket; something else on the hook port is not the recorder.
  const health = await recorderHealth();
  const answering = health !== null;
  const ports = health
    ? {
        hooks: health.http === "listening" ? null : (health.http_error ?? "not listening"),
        gateway: health.gateway === undefined || health.gateway === "listening" ? null : (health.gateway_error ?? "not listening"),
      }
    : null;
  const state =
    isAlive && answering
      ? "running"
      : isAlive
        ? "not answering"
        : !answering && (await answers(host.ports.hooks))
          ? "unknown process on port"
          : "stopped";
  return { state, pid, alive: isAlive, port: host.ports.hooks, answering, ports, recorder: summary() };
}

function gatewayOf(v: unknown): RecorderSummary["gateway"] {
  if (v === null || typeof v !== "object") return null;
  const g = v as Record<string, unknown>;
  const n = (x: unknown) => (typeof x === "number" && x >= 0 ? x : 0);
  const errorOf = (x: unknown) => {
    const e = x as { t?: unknown; message?: unknown } | null | undefined;
    return e && typeof e.message === "string" && typeof e.t === "number" ? { t: e.t, message: e.message } : null;
  };
  const m = g.mcp !== null && typeof g.mcp === "object" ? (g.mcp as Record<string, unknown>) : null;
  return {
    listening: typeof g.listening === "string" ? g.listening : "unknown",
    carried: n(g.carried),
    refused: n(g.refused),
    answered: n(g.answered),
    client_closed: n(g.client_closed),
    last_call_ms: typeof g.last_call_ms === "number" ? g.last_call_ms : null,
    last_error: errorOf(g.last_error),
    mcp: m
      ? {
          calls: n(m.calls),
          refused: n(m.refused),
          catalog_unverified: n(m.catalog_unverified),
          answered: n(m.answered),
          last_call_ms: typeof m.last_call_ms === "number" ? m.last_call_ms : null,
          last_error: errorOf(m.last_error),
        }
      : null,
  };
}
