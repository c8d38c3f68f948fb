import { canonicalJson, type Payload, type Policy, type ToolDecisionMeta, toolOutputValue } from "../../../protocol/index.ts";
import { bodyFields, makeBody } from "../../recorder/bodies.ts";
import type { Step } from "../../recorder/mapper.ts";
import { OXAGEN_MCP_SERVER } from "../../recorder/oxagen-tools.ts";

/** One `tools/call` the gateway carried, as it ended. */
export interface CarriedToolCall {
  tool: string;
  /** The call's `params.arguments` (`{}` when absent). */
  args: unknown;
  /** The harness's id of the call, from the PreToolUse it followed. */
  toolUseId: string | null;
  status: "ok" | "error" | "interrupted";
  durationMs: number;
  /** The result (null: a JSON-RPC error, no answer, or one too large to hold). */
  result: Record<string, unknown> | null;
  /** The server's meter row (`_meta["io.oxagen/call"].call_id`). */
  callId: string | null;
}

/** A value's text as the server hashes it (its canonical JSON; the bodies then hash the same bytes). */
function canonicalText(value: unknown): string {
  try {
    return canonicalJson(value);
  } catch {
    return JSON.stringify(value ?? null) ?? "null";
  }
}

/**
 * The `tool_call` of a call on the workspace's Oxagen tools: its input and output as the bodies of
 * their canonical JSON (redacted, then hashed), so the digests are the meter row's (record-format §12).
 */
export function oxagenToolCallStep(c: CarriedToolCall, retention: Policy["retention"] | null): Step {
  const input = makeBody("tool_input", canonicalText(c.args ?? {}), retention);
  const output = c.result ? makeBody("tool_output", canonicalText(toolOutputValue(c.result)), retention) : null;
  const bodies = output ? [input, output] : [input];
  const payload: Payload<"tool_call"> = {
    path: "gateway",
    ...bodyFields(bodies),
    tool_name: c.tool.slice(0, 256),
    ...(c.toolUseId ? { tool_use_id: c.toolUseId.slice(0, 256) } : {}),
    status: c.status,
    duration_ms: c.durationMs,
    input: input.digest,
    ...(output ? { output: output.digest } : {}),
    server: OXAGEN_MCP_SERVER,
    ...(c.callId ? { call_id: c.callId } : {}),
  };
  return { kind: "tool_call", payload, bodies };
}

/** The `policy_decision` of a call the server refused: its rule and the reason's hash, never the reason's text. */
export function oxagenRefusalStep(d: ToolDecisionMeta, tool: string, toolUseId: string | null): Step {
  const payload: Payload<"policy_decision"> = {
    path: "gateway",
    subject: "oxagen_tool",
    decision: "deny",
    mode: "enforce",
    rule: d.rule,
    reason_sha256: d.reason_sha256,
    tool_name: tool.slice(0, 256),
    ...(toolUseId ? { tool_use_id: toolUseId.slice(0, 256) } : {}),
    call_id: d.call_id,
  };
  return { kind: "policy_decision", payload, bodies: [] };
}

/** The `error` of an MCP request the gateway answered itself (too large, a catalog that does not verify, the server unreachable). */
export function mcpAnsweredStep(code: string, status: number): Step {
  return { kind: "error", payload: { path: "gateway", code, forwarded: false, status, vendor: OXAGEN_MCP_SERVER }, bodies: [] };
}
