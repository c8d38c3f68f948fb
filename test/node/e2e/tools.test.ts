// End to end over real sockets: the Worker under `wrangler dev`, its workspace tools calling the
// local upstreams on 127.0.0.1, and the official MCP clients as a direct client would run them.
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROUTES } from "../../../protocol/index.ts";
import { startToolUpstreams, type ToolUpstreams } from "../../support/tool-upstreams.ts";
import { startWorker, type LocalWorker } from "../../support/worker.ts";

const SECRET = "sk_live_e2e_never_comes_back_0123456789";
let worker: LocalWorker;
let upstreams: ToolUpstreams;
let toolToken: string;

const tag = () => `e${Math.random().toString(16).slice(2, 14)}`;
const hits = async (t: string) => (await (await fetch(`${upstreams.http}/hits/${t}`)).json()) as { hits: number; aborted: number };

beforeAll(async () => {
  [worker, upstreams] = await Promise.all([startWorker(), startToolUpstreams()]);
  const all = [{ id: "all", decision: "allow" }];
  const refund = {
    name: "refund",
    description: "Refunds part of a charge.",
    input_schema: { type: "object", properties: { charge: { type: "string" }, amount: { type: "integer" }, tag: { type: "string" } } },
    binding: { kind: "http", method: "POST", origin: upstreams.http, path: "/v1/charges/{charge}/refunds" },
    credential: SECRET,
    access: [{ id: "cap", decision: "allow", arguments: { amount: { maximum: 5000 } } }],
  };
  const lookup = { name: "lookup", binding: { kind: "mcp", url: `${upstreams.mcp}/e2e`, tool: "lookup" }, credential: SECRET, access: all };
  for (const tool of [refund, lookup]) {
    const res = await worker.api("/v1/tools", { method: "POST", body: JSON.stringify(tool) });
    if (res.status !== 201) throw new Error(`tool: ${res.status} ${await res.text()}`);
  }
  const minted = await worker.api("/v1/tool-tokens", { method: "POST", body: JSON.stringify({ agent: "refunds-bot" }) });
  toolToken = ((await minted.json()) as { token: string }).token;
}, 240_000);

afterAll(async () => {
  await Promise.all([worker?.stop(), upstreams?.close()]);
});

const url = () => new URL(`${worker.url}${ROUTES.mcp(worker.workspace)}`);
const headers = () => ({ authorization: `Bearer ${toolToken}` });

describe("workspace tools under wrangler dev", () => {
  // A client's disconnect does not reach the Worker under `wrangler dev` (its proxy layers keep the
  // request), so cancellation is tested in workerd directly (test/workers/tools-upstream.test.ts).
  it("serves both clients over a real socket: an allowed call with the credential scrubbed, a refused one, an upstream MCP tool", async () => {
    const v1 = new ClientV1({ name: "e2e-v1", version: "1" });
    await v1.connect(new TransportV1(url(), { requestInit: { headers: headers() } }));
    const v2 = new ClientV2({ name: "e2e-v2", version: "2" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
    await v2.connect(new TransportV2(url(), { requestInit: { headers: headers() } }));
    for (const client of [v1 as unknown as ClientV2, v2]) {
      const t = tag();
      const ok = await client.callTool({ name: "refund", arguments: { charge: "ch_1", amount: 100, tag: t } });
      expect(ok.isError).toBeFalsy();
      expect(JSON.stringify(ok)).not.toContain(SECRET);
      const refused = await client.callTool({ name: "refund", arguments: { charge: "ch_1", amount: 9000, tag: t } });
      expect(refused.isError).toBe(true);
      expect(await hits(t)).toEqual({ hits: 1, aborted: 0 });
    }
    const upstream = await v2.callTool({ name: "lookup", arguments: { customer: "cus_1", tag: tag() } });
    expect(JSON.stringify(upstream)).toContain("[credential removed by Oxagen]");
    expect(JSON.stringify(upstream)).not.toContain(SECRET);
    const calls = (await (await worker.api("/v1/tool-calls?tool=refund")).json()) as { calls: { status: string }[] };
    expect(calls.calls.map((c) => c.status).sort()).toEqual(["ok", "ok", "refused", "refused"]);
    expect(JSON.stringify(calls)).not.toContain(SECRET);
  });
});
