import { describe, expect, it } from "vitest";
import { enrollHost, seedWorkspace } from "./support.ts";
import { connect, defineTool, meterRows, refundsTool, SECRET, textOf, toolToken, newTag } from "./tools-support.ts";

describe("smoke", () => {
  it("lists and calls", async () => {
    const { token } = await seedWorkspace();
    const host = await enrollHost(token);
    const tool = await defineTool(token, refundsTool());
    expect(JSON.stringify(tool)).not.toContain(SECRET);
    const direct = await toolToken(token, "refunds-bot");
    for (const kind of ["v2-legacy", "v2-modern", "v1"] as const) {
      const client = await connect(kind, host.workspaceId, { kind: "direct", token: direct });
      const list = await client.listTools();
      console.log(kind, JSON.stringify(list).slice(0, 600));
      const tag = newTag();
      const r = await client.callTool({ name: "refund", arguments: { charge: "ch_1", amount: 100, tag } });
      console.log(kind, JSON.stringify(r).slice(0, 800));
      const g = await connect(kind, host.workspaceId, { kind: "gateway", host, agent: "claude-code" });
      const r2 = await g.callTool({ name: "refund", arguments: { charge: "ch_1", amount: 6000, tag } });
      console.log(kind, JSON.stringify(r2).slice(0, 800));
      console.log(textOf(r));
    }
    console.log(JSON.stringify(await meterRows(token)).slice(0, 1500));
  });
});
