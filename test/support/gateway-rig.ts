// The gateway's request handler on a loopback port, in this process, over a recorder rig (sources.ts)
// and a scripted upstream (upstream.ts): what the gateway tests drive with the official SDKs.
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { existsSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { defaultPolicy, hostChainId, type Policy, runIdFor } from "../../protocol/index.ts";
import { emptyStats, gatewayHandler, recorderSink } from "../../collector/gateway/index.ts";
import type { BudgetLeases } from "../../collector/gateway/lease.ts";
import type { GatewayTimeouts } from "../../collector/gateway/model/forward.ts";
import { listenLoopback } from "../../collector/lib/loopback.ts";
import { freePort } from "./recorder.ts";
import { HOST_ID, payloadsOf, rig, type Rig } from "./sources.ts";
import { type Scripted, startUpstream, type Upstream, type UpstreamRequest } from "./upstream.ts";

export interface GatewayRig {
  r: Rig;
  up: Upstream;
  url: string;
  port: number;
  stats: ReturnType<typeof emptyStats>;
  llm(chain?: string): Record<string, unknown>[];
  kinds(chain: string): string[];
  close(): Promise<void>;
}

const open: GatewayRig[] = [];
/** Closes every gateway {@link gateway} opened (each test file's afterEach). */
export async function closeGateways(): Promise<void> {
  for (const g of open.splice(0)) await g.close();
}

export async function gateway(
  script: (req: UpstreamRequest) => Scripted,
  policy?: Partial<Policy>,
  upstreamUrl?: string,
  secret: string | null = null,
  leases?: BudgetLeases,
  timeouts?: GatewayTimeouts,
): Promise<GatewayRig> {
  const r = rig();
  if (policy) r.recorder.policy = { policy: { ...defaultPolicy("ws_test", 1), ...policy }, etag: "etag-test" };
  const up = await startUpstream(script);
  const stats = emptyStats();
  const port = await freePort();
  const sink = { ...recorderSink(r.recorder, () => secret, leases), upstream: () => new URL(upstreamUrl ?? up.url) };
  const listening = await listenLoopback(port, gatewayHandler(port, sink, stats, timeouts));
  const g: GatewayRig = {
    r,
    up,
    url: `http://127.0.0.1:${port}`,
    port,
    stats,
    llm: (chain = CLAUDE) => (existsSync(join(r.dir, "journal", `${chain}.jsonl`)) ? payloadsOf(r.frames(chain), "llm_call") : []),
    kinds: (chain) => r.frames(chain).map((f) => f.kind),
    close: async () => {
      await listening.close();
      await up.close();
      r.close();
    },
  };
  open.push(g);
  return g;
}

export const SESSION = "sess-gw-1";
export const CLAUDE = runIdFor(HOST_ID, "claude-code", SESSION);
export const HOST_CHAIN = hostChainId(HOST_ID);
export const MODEL = "claude-sonnet-4-5";

export function anthropic(g: GatewayRig, headers: Record<string, string> = { "x-claude-code-session-id": SESSION }) {
  return new Anthropic({ apiKey: "sk-ant-api03-test-key-not-real", baseURL: g.url, maxRetries: 0, defaultHeaders: headers });
}

export function openai(g: GatewayRig, headers: Record<string, string> = { "x-oxagen-agent": "my-agent", "x-oxagen-session-id": SESSION }) {
  return new OpenAI({ apiKey: "sk-test-openai-not-real", baseURL: `${g.url}/v1`, maxRetries: 0, defaultHeaders: headers });
}

export const AGENT = runIdFor(HOST_ID, "my-agent", SESSION);

/** A raw POST through the gateway: the status, headers and exact bytes the client receives. */
export function raw(url: string, path: string, body: unknown, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; headers: Record<string, unknown>; bytes: Buffer }>((resolve, reject) => {
    const text = typeof body === "string" ? body : JSON.stringify(body);
    const req = request(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, bytes: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(text);
  });
}
