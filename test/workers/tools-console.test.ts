import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { lineDiff } from "../../workers/console/tools.tsx";
import { signInCookie } from "./console-support.ts";
import { BASE, enrollHost, seedWorkspace } from "./support.ts";
import { connect, defineTool, newTag, refundsTool, SECRET, upstreams } from "./tools-support.ts";

async function page(cookie: string, path: string) {
  const res = await exports.default.fetch(`${BASE}${path}`, { headers: { cookie }, redirect: "manual" });
  return { status: res.status, html: await res.text() };
}

describe("the console's Tools pages", () => {
  it("lists the catalog with each tool's calls, refusals and spend, and each call of a tool", async () => {
    const { token, workspaceId } = await seedWorkspace();
    const host = await enrollHost(token);
    await defineTool(token, refundsTool({ cost_microusd: 250_000 }));
    const client = await connect("v2-legacy", workspaceId, { kind: "gateway", host, agent: "claude-code" });
    const tag = newTag();
    await client.callTool({ name: "refund", arguments: { charge: "ch_1", amount: 10, tag } });
    await client.callTool({ name: "refund", arguments: { charge: "ch_1", amount: 9000, tag } });
    const { cookie } = await signInCookie(token);
    const list = await page(cookie, "/console/tools");
    expect(list.status).toBe(200);
    expect(list.html).toContain('href="/console/tools"');
    expect(list.html).toMatch(/<a href="\/console\/tools\/refund">refund<\/a>/);
    // Two calls, one refused, one charged $0.25.
    expect(list.html).toMatch(/<td>\$0\.25<\/td><td>2<\/td><td>1<\/td><td>0<\/td><td>\$0\.25<\/td>/);
    const one = await page(cookie, "/console/tools/refund");
    expect(one.html).toContain("cap");
    expect(one.html).toContain("refused");
    expect(one.html).toContain("never shown");
    expect(one.html).not.toContain(SECRET);
    expect((await page(cookie, "/console/tools/nope")).status).toBe(404);
  });

  it("shows a drifted upstream definition as a diff, and approving it serves the new one", async () => {
    const { token, workspaceId } = await seedWorkspace();
    const host = await enrollHost(token);
    const variant = newTag();
    await defineTool(token, {
      name: "lookup",
      binding: { kind: "mcp", url: `${upstreams().mcp}/${variant}`, tool: "lookup" },
      access: [{ id: "all", decision: "allow" }],
    });
    await fetch(`${upstreams().http}/describe/${variant}`, { method: "POST", body: "Looks up a customer, then emails it out." });
    const client = await connect("v2-modern", workspaceId, { kind: "gateway", host, agent: "claude-code" });
    await client.callTool({ name: "lookup", arguments: { customer: "c", tag: newTag() } });
    const { cookie, csrf } = await signInCookie(token);
    const before = await page(cookie, "/console/tools/lookup");
    expect(before.html).toContain("The upstream changed this tool");
    expect(before.html).toContain('<span class="removed">-   &quot;description&quot;: &quot;Looks up a customer by id.&quot;,\n</span>');
    expect(before.html).toContain(
      '<span class="added">+   &quot;description&quot;: &quot;Looks up a customer, then emails it out.&quot;,\n</span>',
    );
    const sha = /name="sha256" value="([0-9a-f]{64})"/.exec(before.html)![1]!;
    const stale = await exports.default.fetch(`${BASE}/console/tools/lookup/approve`, {
      method: "POST",
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ csrf: "0".repeat(32), sha256: sha }).toString(),
      redirect: "manual",
    });
    expect(stale.status).toBe(403);
    const res = await exports.default.fetch(`${BASE}/console/tools/lookup/approve`, {
      method: "POST",
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ csrf, sha256: sha }).toString(),
      redirect: "manual",
    });
    expect(res.status).toBe(303);
    const after = await page(cookie, "/console/tools/lookup?done=approved");
    expect(after.html).not.toContain("The upstream changed this tool");
    expect((await client.listTools()).tools[0]?.description).toBe("Looks up a customer, then emails it out.");
  });

  it("diffs lines: kept, removed, added", () => {
    expect(lineDiff("a\nb\nc", "a\nx\nc")).toEqual([
      { op: " ", line: "a" },
      { op: "+", line: "x" },
      { op: "-", line: "b" },
      { op: " ", line: "c" },
    ]);
  });
});
