import { ProtocolError, ProtocolErrorCode } from "@modelcontextprotocol/server";
import {
  bytesToHex,
  type Policy,
  sha256Hex,
  stopOf,
  TOOL_META,
  type ToolCallMeta,
  type ToolDecisionMeta,
  toolInputDigest,
  toolOutputDigest,
} from "../../protocol/index.ts";
import { workspaceObject } from "../lib/policy-store.ts";
import { pushPolicies } from "../lib/push.ts";
import type { CallEnd, MeterCall } from "../workspace/tool-meter.ts";
import { argumentsRefusal, type Caller, clauseFor } from "./access.ts";
import { credentialForms, credentialHeader, openCredential, scrub } from "./credential.ts";
import { EgressRefused, loopbackAllowed } from "./egress.ts";
import { markDrift, upstreamOf } from "./drift.ts";
import type { StoredTool } from "./store.ts";
import { ArgumentUnplaceable, callHttp, httpRequestOf } from "./upstream-http.ts";
import { callUpstream } from "./upstream-mcp.ts";

/** What one request to the MCP endpoint knows: its caller, and (read once, when needed) the tools and the stops. */
export interface McpScope {
  env: Env;
  workspaceId: string;
  caller: Caller;
  tools: () => Promise<StoredTool[]>;
  /** The policy the operator's stops are read from (the host's own, or the workspace's for a direct client). */
  policy: () => Promise<Policy>;
  waitUntil: (p: Promise<unknown>) => void;
}

/** A `tools/call` result as the endpoint answers it. */
export type CallResult = Record<string, unknown> & { content: unknown[]; isError?: boolean; _meta: Record<string, unknown> };

/** A call id: `tc_`, 12 hex of the time in ms, 20 random hex (protocol `ToolCallId`). */
export function newCallId(now: number): string {
  return `tc_${now.toString(16).padStart(12, "0")}${bytesToHex(crypto.getRandomValues(new Uint8Array(10)))}`;
}

const text = (t: string) => [{ type: "text", text: t }];

function refusal(callId: string, defSha256: string, rule: string, reason: string): CallResult {
  const decision: ToolDecisionMeta = { outcome: "deny", rule, reason_sha256: sha256Hex(reason), call_id: callId };
  const call: ToolCallMeta = { call_id: callId, definition_sha256: defSha256 };
  return {
    content: text(`Oxagen refused this call (${rule}): ${reason}.`),
    isError: true,
    _meta: { [TOOL_META.call]: call, [TOOL_META.decision]: decision },
  };
}

/** The tool a caller may use by that name, with the clause that lets it; an unknown or hidden one is the protocol's invalid-params error. */
export async function usableTool(scope: McpScope, name: string) {
  const tool = (await scope.tools()).find((t) => t.definition.name === name);
  const clause = tool ? clauseFor(tool.access, scope.caller) : null;
  if (!tool || clause?.decision !== "allow") throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${name}`);
  return { tool, clause };
}

/** How the binding answered: the result to give (before scrubbing), and how the call ends in the meter. */
type Outcome = { result: Record<string, unknown>; end: Omit<CallEnd, "id" | "durationMs" | "outputSha256" | "outputSize" | "scrubbed"> };

const failed = (t: string, forwarded: boolean, upstreamStatus: number | null = null): Outcome => ({
  result: { content: text(t), isError: true },
  end: { status: "error", forwarded, upstreamStatus },
});

/**
 * One `tools/call`: the operator's stops (protocol `stopOf`, as model calls are refused), a
 * definition waiting for approval, the access clause's argument narrowing, then the meter's
 * reservation (call-count limits and budgets), the binding with the credential injected, and the
 * settlement. Every refusal is a result with `isError` and the decision in `_meta`; every call
 * has a meter row.
 */
export async function callTool(
  scope: McpScope,
  name: string,
  args: Record<string, unknown>,
  opts: { signal: AbortSignal; progress?: (p: { progress: number; total?: number; message?: string }) => void },
): Promise<CallResult> {
  const { tool, clause } = await usableTool(scope, name);
  let input: ReturnType<typeof toolInputDigest>;
  try {
    input = toolInputDigest(args);
  } catch (err) {
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, `The arguments cannot be read: ${(err as Error).message}`);
  }
  const { env, caller } = scope;
  const now = Date.now();
  const id = newCallId(now);
  const defSha256 = tool.row.defSha256;
  const call: MeterCall = {
    id,
    tool: name,
    defSha256,
    caller: caller.kind,
    hostId: caller.hostId,
    agent: caller.agent,
    runId: caller.runId,
    tokenId: caller.tokenId,
    inputSha256: input.sha256,
    inputSize: input.size,
  };
  const meter = workspaceObject(env, scope.workspaceId);
  const refuse = async (rule: string, reason: string) => {
    await meter.refuseToolCall(call, { rule, reason, reasonSha256: sha256Hex(reason) }, now);
    return refusal(id, defSha256, rule, reason);
  };

  const policy = await scope.policy();
  const stop = stopOf(policy, { hostId: caller.hostId ?? "", runId: caller.runId, agent: caller.agent, now });
  if (stop) return refuse(stop.rule, stop.reason);
  if (tool.drift) return refuse("definition_drift", "the tool's definition changed at its upstream and waits for an operator's approval");
  const bad = argumentsRefusal(tool.definition.inputSchema, clause, args);
  if (bad) return refuse(bad.rule, bad.reason);
  const opened = await openCredential(env, tool.row);
  if ("problem" in opened) return refuse("credential", opened.problem);

  const reserved = await meter.reserveToolCall(
    call,
    { costMicrousd: tool.row.costMicrousd, limits: tool.limits, budgets: policy.budgets },
    now,
  );
  if (!reserved.granted) return refusal(id, defSha256, reserved.rule, reserved.reason);
  if (reserved.changed) scope.waitUntil(pushPolicies(env, scope.workspaceId));

  const header = credentialHeader(tool.binding.credential, opened.credential);
  const forms = opened.credential !== null && header ? credentialForms(opened.credential, header[1]) : [];
  const started = Date.now();
  const signal = AbortSignal.any([opts.signal, AbortSignal.timeout(tool.binding.timeout_ms)]);
  const outcome = await invoke(scope, tool, args, opened.credential, signal, opts.progress);
  if (opts.signal.aborted) outcome.end.status = "cancelled";

  const scrubbed = scrubResult(outcome.result, forms);
  const result = capResult(scrubbed.result, tool.binding.max_response_bytes);
  const output = toolOutputDigest(result);
  const end: CallEnd = {
    id,
    ...outcome.end,
    durationMs: Date.now() - started,
    outputSha256: output.sha256,
    outputSize: output.size,
    scrubbed: scrubbed.scrubbed,
  };
  if (result !== scrubbed.result) end.status = "error";
  // Settled even when the client has gone: the reservation must not outlive the call.
  // The push (which waits for recorders' acknowledgements) runs after the answer, never before it.
  const settled = meter.settleToolCall(end, policy.budgets, Date.now());
  scope.waitUntil(settled.then(({ changed }) => (changed ? pushPolicies(env, scope.workspaceId) : undefined)));
  await settled;
  if (end.status === "refused") return refusal(id, defSha256, end.rule!, end.reason!);
  const meta: ToolCallMeta = { call_id: id, definition_sha256: defSha256 };
  return { content: [], ...result, _meta: { [TOOL_META.call]: meta } } as CallResult;
}

async function invoke(
  scope: McpScope,
  tool: StoredTool,
  args: Record<string, unknown>,
  credential: string | null,
  signal: AbortSignal,
  progress?: (p: { progress: number; total?: number; message?: string }) => void,
): Promise<Outcome> {
  const b = tool.binding;
  try {
    if (b.kind === "http") {
      const req = httpRequestOf(b, args);
      const header = credentialHeader(b.credential, credential);
      if (header) req.init.headers.set(header[0], header[1]);
      const answer = await callHttp(b, req, loopbackAllowed(scope.env), signal);
      if ("tooLarge" in answer) return failed(`the tool's API answered more than ${b.max_response_bytes} bytes`, true, answer.status);
      const ok = answer.status >= 200 && answer.status < 300;
      if (ok) return { result: { content: text(answer.text) }, end: { status: "ok", forwarded: true, upstreamStatus: answer.status } };
      return failed(`the tool's API answered HTTP ${answer.status}: ${answer.text}`, true, answer.status);
    }
    const out = await callUpstream(upstreamOf(scope.env, b, credential), tool.row.upstreamSha256 ?? "", args, signal, progress);
    if ("drift" in out) {
      await markDrift(scope.env, tool.row, out.drift, Date.now());
      const reason = "the tool's definition changed at its upstream and waits for an operator's approval";
      return { result: {}, end: { status: "refused", forwarded: false, upstreamStatus: null, rule: "definition_drift", reason } };
    }
    const { _meta: _m, ...result } = out.result;
    return { result, end: { status: result.isError === true ? "error" : "ok", forwarded: true, upstreamStatus: null } };
  } catch (err) {
    if (err instanceof EgressRefused) return failed(`Oxagen does not send this tool's requests there: ${err.message}`, false);
    if (err instanceof ArgumentUnplaceable) return failed(`the arguments cannot be sent: ${err.message}`, false);
    if (signal.aborted) {
      const why =
        (signal.reason as Error | undefined)?.name === "TimeoutError"
          ? `no answer within ${tool.binding.timeout_ms} ms`
          : "the call was cancelled";
      return failed(`the tool's call ended: ${why}`, true);
    }
    return failed(`the tool's upstream could not be reached: ${err instanceof Error ? err.message : String(err)}`, true);
  }
}

/** Removes every form of the credential from a result (as JSON text, so every string of it is covered). */
function scrubResult(result: Record<string, unknown>, forms: string[]): { result: Record<string, unknown>; scrubbed: boolean } {
  if (forms.length === 0) return { result, scrubbed: false };
  const out = scrub(JSON.stringify(result), forms);
  if (!out.scrubbed) return { result, scrubbed: false };
  try {
    return { result: JSON.parse(out.text) as Record<string, unknown>, scrubbed: true };
  } catch {
    return { result: { content: text("the tool's answer held its credential and was withheld"), isError: true }, scrubbed: true };
  }
}

/** A result over the binding's size cap is replaced by an error (the cap counts the digest's bytes). */
function capResult(result: Record<string, unknown>, max: number): Record<string, unknown> {
  if (toolOutputDigest(result).size <= max + 1024) return result;
  return { content: text(`the tool's answer is over ${max} bytes and was withheld`), isError: true };
}
