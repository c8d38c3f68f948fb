import { describe, expect, it } from "vitest";
import {
  canonicalJson,
  openToolCatalog,
  publicKeyOf,
  sha256Hex,
  signToolCatalog,
  TOOL_META,
  toolDefinitionDigest,
  toolInputDigest,
  toolOutputDigest,
} from "../../protocol/index.ts";
import { SERVER_SECRET } from "../support/sample-run.ts";

describe("the tool-call digest", () => {
  it("hashes RFC 8785 canonical JSON: members sorted by UTF-16 code units, ECMAScript numbers, JSON.stringify strings", () => {
    // RFC 8785 §3.2.3's sorting example (by UTF-16 code units, not code points).
    const sorted = canonicalJson({
      "\u20ac": "Euro Sign",
      "\r": "Carriage Return",
      "\ufb33": "Hebrew Letter Dalet With Dagesh",
      "1": "One",
      "\ud83d\ude00": "Emoji: Grinning Face",
      "\u0080": "Control",
      "\u00f6": "Latin Small Letter O With Diaeresis",
    });
    // Read back in written order (JSON.parse would put the array index "1" first).
    expect([...sorted.matchAll(/:"([^"]+)"/g)].map((m) => m[1])).toEqual([
      "Carriage Return",
      "One",
      "Control",
      "Latin Small Letter O With Diaeresis",
      "Euro Sign",
      "Emoji: Grinning Face",
      "Hebrew Letter Dalet With Dagesh",
    ]);
    // RFC 8785 §3.2.2.3 numbers.
    expect(canonicalJson([333333333.3333333, 1e30, 4.5, 2e-3, 1e-27, -0, 0.000001, 1e21])).toBe(
      "[333333333.3333333,1e+30,4.5,0.002,1e-27,0,0.000001,1e+21]",
    );
    expect(canonicalJson({ b: [1, { d: null, c: true }], a: '\u2028\u0007"' })).toBe(
      '{"a":"\u2028\\u0007\\"","b":[1,{"c":true,"d":null}]}',
    );
    expect(() => canonicalJson({ x: Number.NaN })).toThrow();
    let deep: unknown = 1;
    for (let i = 0; i < 200; i++) deep = [deep];
    expect(() => canonicalJson(deep)).toThrow(/nested too deeply/);
  });

  it("gives the same input digest whatever the member order and white space the client sent", () => {
    const a = toolInputDigest(JSON.parse('{ "amount": 4200, "charge": "ch_1" }'));
    const b = toolInputDigest(JSON.parse('{"charge":"ch_1","amount":4200}'));
    expect(a).toEqual(b);
    expect(a).toEqual({ sha256: sha256Hex('{"amount":4200,"charge":"ch_1"}'), size: 31 });
    expect(toolInputDigest(undefined)).toEqual({ sha256: sha256Hex("{}"), size: 2 });
  });

  it("hashes an output's content, structuredContent and isError only, so both protocol revisions hash alike", () => {
    const legacy = { content: [{ type: "text", text: "ok" }], _meta: { "io.oxagen/call": { call_id: "x" } } };
    const modern = { ...legacy, resultType: "complete", _meta: { "io.modelcontextprotocol/serverInfo": { name: "oxagen" } } };
    expect(toolOutputDigest(legacy)).toEqual(toolOutputDigest(modern));
    expect(toolOutputDigest(legacy).sha256).toBe(sha256Hex('{"content":[{"text":"ok","type":"text"}]}'));
    expect(toolOutputDigest({ ...legacy, isError: true })).not.toEqual(toolOutputDigest(legacy));
  });
});

describe("the signed tool catalog", () => {
  const tools: Record<string, unknown>[] = [
    { name: "refund", description: "Refunds.", inputSchema: { type: "object", properties: { amount: { type: "number", maximum: 50.5 } } } },
    { name: "lookup", description: "Looks up.", inputSchema: { type: "object" }, _meta: { anything: 1 } },
  ];
  const signed = signToolCatalog(
    { workspace: "ws_1", caller: { kind: "gateway", host: "h-1", agent: "claude-code", run: null }, issued_ms: 1 },
    tools,
    SERVER_SECRET,
    "72c2bff716caa385",
  );
  const result = () => ({ tools: structuredClone(tools), _meta: { [TOOL_META.catalog]: { ...signed } } });
  const key = publicKeyOf(SERVER_SECRET);

  it("opens under the server key and names each tool by its definition digest", () => {
    const catalog = openToolCatalog(result(), key);
    expect(catalog.tools).toEqual(tools.map((t) => ({ name: t.name, sha256: toolDefinitionDigest(t).sha256 })));
    expect(catalog.caller).toEqual({ kind: "gateway", host: "h-1", agent: "claude-code", run: null });
  });

  it("refuses a catalog tampered with on the way: a tool changed, added, dropped or reordered, a payload edited, another key", () => {
    const changed = result();
    (changed.tools[0]!.inputSchema as { properties: { amount: { maximum: number } } }).properties.amount.maximum = 5000;
    expect(() => openToolCatalog(changed, key)).toThrow(/refund differs/);
    const added = result();
    added.tools.push({ name: "wire", description: "Wires money.", inputSchema: { type: "object" } });
    expect(() => openToolCatalog(added, key)).toThrow(/lists 3 tools/);
    const reordered = result();
    reordered.tools.reverse();
    expect(() => openToolCatalog(reordered, key)).toThrow(/tool 0 is lookup/);
    const edited = result();
    edited._meta[TOOL_META.catalog].payload = signed.payload.replace("claude-code", "codex");
    expect(() => openToolCatalog(edited, key)).toThrow(/does not verify/);
    expect(() => openToolCatalog(result(), publicKeyOf(new Uint8Array(32).fill(7)))).toThrow(/does not verify/);
    expect(() => openToolCatalog({ tools }, key)).toThrow(/no signed catalog/);
    // A tool's own _meta is outside its digest.
    const meta = result();
    (meta.tools[1] as { _meta: unknown })._meta = { other: 2 };
    expect(() => openToolCatalog(meta, key)).not.toThrow();
  });
});
