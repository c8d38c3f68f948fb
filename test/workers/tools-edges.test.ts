import { env, exports } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { MAX_MCP_REQUEST_BYTES, ROUTES, TOOL_META, type ToolDecisionMeta } from "../../protocol/index.ts";
import { meterCounts } from "../../workers/lib/meter.ts";
import { egressProblem } from "../../workers/tools/egress.ts";
import { signInCookie } from "./console-support.ts";
import { BASE, enrollHost, hostCall, ingest, op, seedWorkspace, TestRun } from "./support.ts";
import {
  callerFetch,
  connect,
  defineTool,
  meterRows,
  mcpUrl,
  newTag,
  refundsTool,
  SECRET,
  textOf,
  toolToken,
  upstreams,
} from "./tools-support.ts";

const INIT = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
};

async function post(workspaceId: string, headers: Record<string, string>, body: string | Uint8Array = JSON.stringify(INIT)) {
  return exports.default.fetch(mcpUrl(workspaceId), {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body,
  });
}

describe("the MCP endpoint's doors", () => {
  it("refuses a browser Origin of another site, a request not addressed to this server, GET and DELETE, and no credential", async () => {
    const { token, workspaceId } = await seedWorkspace();
    const direct = await toolToken(token, "refunds-bot");
    const auth = { authorization: `Bearer ${direct}` };
    expect((await post(workspaceId, auth)).status).toBe(200);
    expect((await post(workspaceId, { ...auth, origin: BASE })).status).toBe(200);
    const evil = await post(workspaceId, { ...auth, origin: "https://evil.example" });
    expect(evil.status).toBe(403);
    expect(await evil.json()).toMatchObject({ error: "origin_refused" });
    expect((await post(workspaceId, { ...auth, origin: "null" })).status).toBe(403);
    const rebound = await exports.default.fetch(`http://127.0.0.1:8787${ROUTES.mcp(workspaceId)}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...auth },
      body: JSON.stringify(INIT),
    });
    expect(rebound.status).toBe(403);
    for (const method of ["GET", "DELETE"]) {
      const res = await exports.default.fetch(mcpUrl(workspaceId), { method, headers: auth });
      expect(res.status).toBe(405);
      expect(res.headers.get("allow")).toBe("POST");
    }
    const anonymous = await post(workspaceId, {});
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("www-authenticate")).toContain("Bearer");
  });

  it("refuses a request over the size limit before reading it, with 413", async () => {
    const { token, workspaceId } = await seedWorkspace();
    const auth = { authorization: `Bearer ${await toolToken(token, "refunds-bot")}` };
    const big = new Uint8Array(MAX_MCP_REQUEST_BYTES + 1).fill(0x20);
    const res = await post(workspaceId, auth, big);
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ error: "too_large" });
  });

  it("refuses a token of another workspace, a revoked token, an agent header the signature does not cover, another computer's run", async () => {
    const a = await seedWorkspace();
    const b = await seedWorkspace();
    const tokenA = await toolToken(a.token, "refunds-bot");
    expect((await post(b.workspaceId, { authorization: `Bearer ${tokenA}` })).status).toBe(404);
    const list = (await (await op(a.token, "/v1/tool-tokens")).json()) as { tokens: { id: string }[] };
    expect((await op(a.token, `/v1/tool-tokens/${list.tokens[0]!.id}`, { method: "DELETE" })).status).toBe(200);
    const revoked = await post(a.workspaceId, { authorization: `Bearer ${tokenA}` });
    expect(revoked.status).toBe(401);
    expect(((await revoked.json()) as { message: string }).message).toContain("revoked");

    const host = await enrollHost(a.token);
    await defineTool(a.token, refundsTool());
    const signedFor = (spoil: (h: Headers) => void) => callerFetch({ kind: "gateway", host, agent: "claude-code", spoil });
    const call = (f: typeof fetch) =>
      f(mcpUrl(a.workspaceId), {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify(INIT),
      });
    expect((await call(signedFor(() => undefined))).status).toBe(200);
    // The agent header is covered by the signature: changed or dropped, the request does not verify.
    expect((await call(signedFor((h) => h.set("x-oxagen-agent", "refunds-bot")))).status).toBe(401);
    expect((await call(signedFor((h) => h.delete("x-oxagen-agent")))).status).toBe(401);
    // A run of another computer of the workspace: no such run, known from the run's own object
    // as soon as its first batch is in, before the projection wrote its row (and with no D1 read).
    const neighbour = await enrollHost(a.token);
    const theirRun = new TestRun(neighbour);
    theirRun.start();
    expect((await hostCall(neighbour, "POST", "/v1/ingest", JSON.stringify({ chains: [theirRun.part()] }))).status).toBe(200);
    const theirs = callerFetch({ kind: "gateway", host, agent: "claude-code", run: theirRun.chain });
    meterCounts(true);
    expect((await call(theirs)).status).toBe(404);
    const c = meterCounts(true);
    expect(c["request.do.CHAINS.owner"]).toBe(1);
    expect(Object.entries(c).filter(([k, n]) => k.endsWith("d1_statements") && !k.startsWith("projection") && n > 0)).toEqual([]);
    // Its own run, and a run not begun yet, are its to name.
    const mine = new TestRun(host);
    mine.start();
    await ingest(host, [mine.part()]);
    expect((await call(callerFetch({ kind: "gateway", host, agent: "claude-code", run: mine.chain }))).status).toBe(200);
    const fresh = `run_${"ab".repeat(16)}`;
    expect((await call(callerFetch({ kind: "gateway", host, agent: "claude-code", run: fresh }))).status).toBe(200);
    // A host of another workspace: no such workspace.
    const otherHost = await enrollHost(b.token);
    const foreign = callerFetch({ kind: "gateway", host: otherHost, agent: "claude-code" });
    expect((await call(foreign)).status).toBe(404);
  });
});

describe("what a tool may reach (SSRF)", () => {
  it("calls https public addresses only, with loopback allowed only when the deployment allows it", () => {
    const refused = [
      "http://api.example.com",
      "https://10.0.0.1",
      "https://192.168.1.10",
      "https://172.16.0.1",
      "https://169.254.169.254",
      "https://100.64.0.1",
      "https://127.0.0.1",
      "https://[::1]",
      "https://[fe80::1]",
      "https://[::ffff:10.0.0.1]",
      "https://[fd00::1]",
      "https://localhost",
      "https://intranet",
      "https://printer.local",
      "https://db.internal",
      "https://user:pw@api.example.com",
    ];
    for (const url of refused) expect(egressProblem(new URL(url), false), url).not.toBeNull();
    for (const url of ["https://api.stripe.com", "https://8.8.8.8", "https://[2606:4700::1111]"])
      expect(egressProblem(new URL(url), false), url).toBeNull();
    expect(egressProblem(new URL("http://127.0.0.1:8080"), true)).toBeNull();
    expect(egressProblem(new URL("http://localhost:8080"), true)).toBeNull();
    expect(egressProblem(new URL("http://10.0.0.1"), true)).not.toBeNull();
  });

  it("refuses to define a tool on a private address, and does not follow an upstream's redirect", async () => {
    const { token, workspaceId } = await seedWorkspace();
    const res = await op(token, "/v1/tools", {
      json: { ...refundsTool(), binding: { kind: "http", method: "GET", origin: "https://169.254.169.254", path: "/latest" } },
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: "invalid_tool" });
    await defineTool(token, {
      ...refundsTool(),
      name: "hop",
      binding: { kind: "http", method: "GET", origin: upstreams().http, path: "/redirect" },
      access: [{ id: "all", decision: "allow" }],
    });
    const host = await enrollHost(token);
    const client = await connect("v2-legacy", workspaceId, { kind: "gateway", host, agent: "claude-code" });
    const r = await client.callTool({ name: "hop", arguments: { charge: "c", amount: 1, tag: newTag() } });
    expect(r.isError).toBe(true);
    expect(textOf(r)).toContain("HTTP 302");
    expect((await meterRows(token, "tool=hop"))[0]).toMatchObject({ status: "error", upstream_status: 302 });
  });
});

describe("the credential", () => {
  afterEach(() => vi.restoreAllMocks());

  it("is in no answer of the API, no MCP result, no meter row and no log line, and is stored encrypted", async () => {
    const lines: string[] = [];
    for (const level of ["log", "info", "warn", "error", "debug"] as const)
      vi.spyOn(console, level).mockImplementation((...args: unknown[]) => void lines.push(args.map(String).join(" ")));
    const { token, workspaceId } = await seedWorkspace();
    const host = await enrollHost(token);
    const answers: string[] = [];
    answers.push(JSON.stringify(await defineTool(token, refundsTool())));
    await defineTool(token, {
      ...refundsTool(),
      name: "failing",
      binding: { kind: "http", method: "GET", origin: upstreams().http, path: "/fail" },
      access: [{ id: "all", decision: "allow" }],
    });
    for (const path of ["/v1/tools", "/v1/tools/refund", "/v1/tools/failing"]) answers.push(await (await op(token, path)).text());
    answers.push(await (await op(token, "/v1/tools/refund", { method: "PATCH", json: { cost_microusd: 5 } })).text());
    const client = await connect("v2-modern", workspaceId, { kind: "gateway", host, agent: "claude-code" });
    const tag = newTag();
    answers.push(JSON.stringify(await client.listTools()));
    answers.push(JSON.stringify(await client.callTool({ name: "refund", arguments: { charge: "c", amount: 1, tag } })));
    const failed = await client.callTool({ name: "failing", arguments: { charge: "c", amount: 1, tag } });
    expect(failed.isError).toBe(true);
    answers.push(JSON.stringify(failed));
    answers.push(JSON.stringify(await meterRows(token)));
    for (const page of ["/console/tools", "/console/tools/refund", "/console/tools/failing"]) answers.push(await consolePage(token, page));
    for (const a of answers) expect(a).not.toContain(SECRET);
    expect(answers.join("\n")).toContain("[credential removed by Oxagen]");
    for (const l of lines) expect(l).not.toContain(SECRET);

    const row = await env.DB.prepare("SELECT credential, credential_key_id FROM tools WHERE name = 'refund'").first<{
      credential: string;
    }>();
    expect(row?.credential).toBeTruthy();
    expect(row?.credential).not.toContain(SECRET);
    expect(atob(row!.credential)).not.toContain(SECRET);
  });

  it("does not open in another tool's row: a moved ciphertext refuses the call, and the upstream never sees it", async () => {
    const { token, workspaceId } = await seedWorkspace();
    const host = await enrollHost(token);
    await defineTool(token, refundsTool());
    await defineTool(token, { ...refundsTool(), name: "copy", credential: "another-secret" });
    await env.DB.prepare(
      "UPDATE tools SET credential = (SELECT credential FROM tools WHERE name = 'refund' AND workspace_id = ?1) WHERE name = 'copy' AND workspace_id = ?1",
    )
      .bind(workspaceId)
      .run();
    const client = await connect("v2-legacy", workspaceId, { kind: "gateway", host, agent: "claude-code" });
    const r = await client.callTool({ name: "copy", arguments: { charge: "c", amount: 1, tag: newTag() } });
    expect((r._meta?.[TOOL_META.decision] as ToolDecisionMeta | undefined)?.rule).toBe("credential");
    expect(textOf(r)).toContain("must enter it again");
  });
});

/** A console page's HTML, signed in with the operator token. */
async function consolePage(token: string, path: string): Promise<string> {
  const { cookie } = await signInCookie(token);
  const res = await exports.default.fetch(`${BASE}${path}`, { headers: { cookie } });
  expect(res.status, path).toBe(200);
  return res.text();
}
