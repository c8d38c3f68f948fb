/**
 * Workspace tools over MCP: the contract between the server's hosted MCP endpoint and the
 * collector's gateway (docs/api.md "Workspace tools", docs/record-format.md §12).
 *
 * - The **tool-call digest**: how a call's input (`params.arguments`) and output (the
 *   `tools/call` result's `content`, `structuredContent` and `isError`) are hashed, so the
 *   gateway's `tool_call` frame and the server's meter row can be checked against each other
 *   without either keeping content.
 * - The `_meta` members the server puts on its answers: the call's id, a refusal's decision,
 *   and the signed catalog on every `tools/list` result.
 * - The catalog signature and {@link openToolCatalog}, which the gateway checks it with.
 * @module
 */
import { z } from "zod";
import { bytesToHex, fromHex, utf8 } from "./bytes.ts";
import { sign, verifyStrict } from "./ed25519.ts";
import { sha256Hex } from "./hash.ts";
import { AgentName, HostId, RunId, Sha256Hex } from "./ids.ts";
import { parseRecordJson, type RecordJsonValue, toRecordJson } from "./json.ts";
import { pae } from "./lock.ts";

/** The largest MCP request body the endpoint reads (413 past it). */
export const MAX_MCP_REQUEST_BYTES = 1024 * 1024;

/**
 * The `_meta` members of the server's answers. `call` is on every `tools/call` result,
 * `decision` on a refused one, `catalog` on every `tools/list` result.
 */
export const TOOL_META = {
  call: "io.oxagen/call",
  decision: "io.oxagen/decision",
  catalog: "io.oxagen/catalog",
} as const;

/** A tool's name: short, so `mcp__oxagen__<name>` stays within the 64 characters harnesses allow. */
export const ToolName = z.string().regex(/^[a-z][a-z0-9_]{0,39}$/, "a tool name: a-z first, then a-z, 0-9 or _, at most 40");

/** A call id: `tc_` + 12 hex of the server's clock in ms + 20 random hex, so ids sort by time. */
export const ToolCallId = z.string().regex(/^tc_[0-9a-f]{32}$/, "not a tool call id");

/** `_meta["io.oxagen/call"]` of a `tools/call` result: the meter row's id and the approved definition's digest. */
export const ToolCallMeta = z.strictObject({ call_id: ToolCallId, definition_sha256: Sha256Hex });
/** One of {@link ToolCallMeta}. */
export type ToolCallMeta = z.infer<typeof ToolCallMeta>;

/**
 * `_meta["io.oxagen/decision"]` of a refused call (a result with `isError: true`): the rule that
 * refused it (a clause id, or `definition_drift`, `input_schema`, `suspended_host`, `paused_run`,
 * `paused_agent`, `budget`), the SHA-256 of the reason text the result's content carries, and the
 * call id. The gateway records it as a `policy_decision` frame with the reason as a hash only.
 */
export const ToolDecisionMeta = z.strictObject({
  outcome: z.literal("deny"),
  rule: z.string().min(1).max(64),
  reason_sha256: Sha256Hex,
  call_id: ToolCallId,
});
/** One of {@link ToolDecisionMeta}. */
export type ToolDecisionMeta = z.infer<typeof ToolDecisionMeta>;

const MAX_DEPTH = 128;

/**
 * The canonical JSON text of a JSON value (RFC 8785, JCS): members sorted by their names' UTF-16
 * code units, no white space, strings and numbers as ECMAScript's `JSON.stringify` prints them.
 * The value is what `JSON.parse` reads (a duplicate member name: the last one); a lone surrogate
 * is printed escaped (`\udxxx`), as `JSON.stringify` does. Throws on anything JSON cannot hold
 * and past 128 levels of nesting.
 */
export function canonicalJson(value: unknown): string {
  return canon(value, 0);
}

function canon(value: unknown, depth: number): string {
  if (depth > MAX_DEPTH) throw new Error("nested too deeply");
  switch (typeof value) {
    case "string":
    case "boolean":
      return JSON.stringify(value);
    case "number":
      if (!Number.isFinite(value)) throw new Error("a number JSON cannot hold");
      return JSON.stringify(value);
    case "object": {
      if (value === null) return "null";
      if (Array.isArray(value)) return `[${value.map((v) => canon(v, depth + 1)).join(",")}]`;
      const obj = value as Record<string, unknown>;
      const members = Object.keys(obj)
        .filter((k) => obj[k] !== undefined)
        .sort()
        .map((k) => `${JSON.stringify(k)}:${canon(obj[k], depth + 1)}`);
      return `{${members.join(",")}}`;
    }
    default:
      throw new Error(`a value of type ${typeof value} JSON cannot hold`);
  }
}

/** A digest: the SHA-256 and the size in bytes of a value's canonical JSON text in UTF-8. */
export interface ToolDigest {
  sha256: string;
  size: number;
}

/** The digest of a JSON value ({@link canonicalJson}, then SHA-256 over its UTF-8 bytes). */
export function toolDigest(value: unknown): ToolDigest {
  const bytes = utf8(canonicalJson(value));
  return { sha256: sha256Hex(bytes), size: bytes.length };
}

/** The input digest of a `tools/call`: of `params.arguments`, `{}` when absent. */
export function toolInputDigest(args: unknown): ToolDigest {
  return toolDigest(args ?? {});
}

/**
 * The output digest of a `tools/call` result: of the object holding only its `content`,
 * `structuredContent` and `isError` members, those present. `_meta`, `resultType` and any
 * member a protocol revision adds are left out, so both revisions hash alike.
 */
export function toolOutputDigest(result: Record<string, unknown>): ToolDigest {
  return toolDigest(toolOutputValue(result));
}

/** What a `tools/call` result's output digest is of: only its `content`, `structuredContent` and `isError`, those present. */
export function toolOutputValue(result: Record<string, unknown>): Record<string, unknown> {
  const picked: Record<string, unknown> = {};
  for (const k of ["content", "structuredContent", "isError"] as const) if (result[k] !== undefined) picked[k] = result[k];
  return picked;
}

/** The digest of a listed tool: of the tool object without its `_meta`. */
export function toolDefinitionDigest(tool: Record<string, unknown>): ToolDigest {
  const { _meta: _m, ...rest } = tool;
  return toolDigest(rest);
}

/** The DSSE payload type of a signed tool catalog. */
export const TOOL_CATALOG_PAYLOAD_TYPE = "application/vnd.oxagen.tool-catalog.v1+json";

/** Who a catalog was listed for: the gateway of a host (for a run, or none) or a direct client's agent. */
export const CatalogCaller = z.strictObject({
  kind: z.enum(["gateway", "direct"]),
  host: HostId.nullable(),
  agent: AgentName.nullable(),
  run: RunId.nullable(),
});
/** One of {@link CatalogCaller}. */
export type CatalogCaller = z.infer<typeof CatalogCaller>;

/**
 * What a catalog signature covers: the workspace, the caller it was listed for, when, and each
 * listed tool's name and {@link toolDefinitionDigest}, in the order listed.
 */
export const ToolCatalog = z.strictObject({
  v: z.literal(1),
  workspace: z.string().min(1).max(128),
  caller: CatalogCaller,
  issued_ms: z.number().int().nonnegative(),
  tools: z.array(z.strictObject({ name: ToolName, sha256: Sha256Hex })).max(1000),
});
/** One of {@link ToolCatalog}. */
export type ToolCatalog = z.infer<typeof ToolCatalog>;

/** `_meta["io.oxagen/catalog"]` of a `tools/list` result: the catalog's Record JSON text, signed by the server's key. */
export const SignedToolCatalog = z.strictObject({
  payload_type: z.literal(TOOL_CATALOG_PAYLOAD_TYPE),
  payload: z.string().min(2).max(1_000_000),
  key_id: z.string().regex(/^[0-9a-f]{16}$/),
  sig: z.string().regex(/^[0-9a-f]{128}$/),
});
/** One of {@link SignedToolCatalog}. */
export type SignedToolCatalog = z.infer<typeof SignedToolCatalog>;

/** Signs the catalog of the tools listed (each tool as listed, `_meta` aside). */
export function signToolCatalog(
  c: Omit<ToolCatalog, "v" | "tools">,
  tools: Record<string, unknown>[],
  serverSecretKey: Uint8Array,
  serverKeyId: string,
): SignedToolCatalog {
  const catalog: ToolCatalog = { v: 1, ...c, tools: tools.map((t) => ({ name: String(t.name), sha256: toolDefinitionDigest(t).sha256 })) };
  const payload = toRecordJson(ToolCatalog.parse(catalog) as RecordJsonValue);
  const sig = bytesToHex(sign(serverSecretKey, pae(TOOL_CATALOG_PAYLOAD_TYPE, utf8(payload))));
  return { payload_type: TOOL_CATALOG_PAYLOAD_TYPE, payload, key_id: serverKeyId, sig };
}

/**
 * Checks a `tools/list` result against the pinned server key: its `_meta["io.oxagen/catalog"]`
 * must verify, and the tools it lists must be exactly the catalog's, in its order, each with the
 * digest the catalog names (so no tool was added, dropped, renamed or changed on the way).
 * Returns the catalog; throws with the reason.
 */
export function openToolCatalog(result: { tools?: unknown; _meta?: unknown }, serverKey: Uint8Array): ToolCatalog {
  const meta = result._meta as Record<string, unknown> | undefined;
  const signed = SignedToolCatalog.safeParse(meta?.[TOOL_META.catalog]);
  if (!signed.success) throw new Error(`the tools/list result carries no signed catalog in _meta["${TOOL_META.catalog}"]`);
  const ok = verifyStrict(serverKey, pae(TOOL_CATALOG_PAYLOAD_TYPE, utf8(signed.data.payload)), fromHex(signed.data.sig, 64));
  if (!ok) throw new Error("the tool catalog's signature does not verify under the pinned server key");
  const catalog = ToolCatalog.parse(parseRecordJson(signed.data.payload));
  const tools = Array.isArray(result.tools) ? (result.tools as Record<string, unknown>[]) : [];
  if (tools.length !== catalog.tools.length)
    throw new Error(`the result lists ${tools.length} tools and the signed catalog ${catalog.tools.length}`);
  catalog.tools.forEach((want, i) => {
    const got = tools[i]!;
    if (got.name !== want.name) throw new Error(`tool ${i} is ${String(got.name)} in the result and ${want.name} in the signed catalog`);
    if (toolDefinitionDigest(got).sha256 !== want.sha256) throw new Error(`tool ${want.name} differs from its signed definition`);
  });
  return catalog;
}
