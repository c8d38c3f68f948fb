import { type ClientRequest, type IncomingMessage, request as httpRequest, type ServerResponse } from "node:http";
import { request as httpsRequest } from "node:https";
import { performance } from "node:perf_hooks";
import { AgentName, ToolCallMeta, ToolDecisionMeta, TOOL_META } from "../../../protocol/index.ts";
import { obj } from "../../lib/json.ts";
import { gatewayToolCallId } from "../../recorder/oxagen-tools.ts";
import { agents, one, responseHeaders, sendJson } from "../http.ts";
import { SseSplitter } from "../model/sse.ts";
import type { GatewaySession } from "../session.ts";
import { type McpStats, rpcError } from "./rpc.ts";
import { type CarriedToolCall, mcpAnsweredStep, oxagenRefusalStep, oxagenToolCallStep } from "./record.ts";
import type { McpSink } from "./sink.ts";

/** The members of a JSON-RPC message the gateway reads. */
export interface McpMessage {
  jsonrpc?: unknown;
  id?: unknown;
  method?: unknown;
  params?: unknown;
}

/** One MCP request while the gateway holds it. */
export interface McpRequestContext {
  req: IncomingMessage;
  res: ServerResponse;
  body: Buffer;
  /** The request, when it is one JSON-RPC message (null: a batch, or not JSON). */
  message: McpMessage | null;
  /** The session the request's headers named. */
  named: GatewaySession | null;
  t: number;
  started: number;
  sink: McpSink;
  stats: McpStats;
  fail: (m: string) => void;
}

/** The client's headers the server's endpoint reads (the MCP transport's own); nothing else passes, no credential of the client's. */
const PASSED = ["accept", "mcp-protocol-version", "mcp-method", "mcp-name", "mcp-session-id", "last-event-id", "user-agent"];

/** The most response bytes held to read the final answer (a tool's own cap is far below it). */
const MAX_HELD = 32 * 1024 * 1024;

/** A call's tool and arguments, for a `tools/call` message. */
function toolCallOf(m: McpMessage | null): { tool: string; args: unknown } | null {
  if (m?.method !== "tools/call") return null;
  const params = obj(m.params);
  return typeof params?.name === "string" ? { tool: params.name, args: params.arguments ?? {} } : null;
}

/**
 * Carries one MCP request to the workspace's endpoint (docs/collector.md, "The MCP side"), signed
 * as this host and naming the run of the session it is tied to, and streams the answer back. A
 * `tools/call` is recorded once its answer is read (before the client has it, so the harness's
 * PostToolUse finds it recorded); a `tools/list` is held until its signed catalog verifies.
 */
export function forwardMcp(c: McpRequestContext): void {
  new McpForward(c).start();
}

class McpForward {
  readonly c: McpRequestContext;
  readonly call: { tool: string; args: unknown } | null;
  readonly session: GatewaySession | null;
  readonly toolUseId: string | null;
  readonly listing: boolean;
  readonly held: Buffer[] = [];
  heldBytes = 0;
  recorded = false;
  up: ClientRequest | null = null;

  constructor(c: McpRequestContext) {
    this.c = c;
    this.call = toolCallOf(c.message);
    const tie = this.call ? c.sink.tie(c.named, this.call.tool, this.call.args) : { session: c.named, toolUseId: null };
    this.session = tie.session;
    this.toolUseId = tie.toolUseId;
    this.listing = c.message?.method === "tools/list";
  }

  elapsed(): number {
    return Math.max(0, Math.round(performance.now() - this.c.started));
  }

  start(): void {
    const { req, res, body, sink } = this.c;
    const { url, path } = sink.endpoint();
    const signed: Record<string, string> = { "content-type": one(req.headers["content-type"]) ?? "application/json" };
    const run = sink.runId(this.session);
    if (run) signed["x-oxagen-run"] = run;
    const agent = this.session?.harness;
    if (agent && AgentName.safeParse(agent).success) signed["x-oxagen-agent"] = agent;
    const headers: Record<string, string | number> = { ...signed, ...sink.sign(path, signed, body), "content-length": body.length };
    for (const name of PASSED) {
      const v = one(req.headers[name]);
      if (v !== undefined) headers[name] = v;
    }
    for (const [name, v] of Object.entries(req.headers)) if (name.startsWith("mcp-param-") && typeof v === "string") headers[name] = v;
    const https = url.protocol === "https:";
    const up = (https ? httpsRequest : httpRequest)(url, { method: "POST", headers, agent: https ? agents.https : agents.http });
    this.up = up;
    up.on("response", (ur) => this.onResponse(ur));
    up.on("error", (err) => this.onError(err));
    res.on("close", () => {
      if (res.writableFinished) return;
      // The client left (a cancellation in the 2026 revision): the server's request goes too.
      up.destroy();
      this.record(null, "interrupted");
    });
    up.end(body);
  }

  /** The final answer to this request among the messages of a response, if one is. */
  finalOf(data: string): Record<string, unknown> | null {
    let m: Record<string, unknown> | null = null;
    try {
      m = obj(JSON.parse(data));
    } catch {
      return null;
    }
    const id = this.c.message?.id;
    if (!m || m.id === undefined || m.id !== id || !("result" in m || "error" in m)) return null;
    return m;
  }

  onResponse(ur: IncomingMessage): void {
    const { res } = this.c;
    const status = ur.statusCode ?? 502;
    const sse = /^text\/event-stream/i.test(one(ur.headers["content-type"]) ?? "");
    // A catalog is passed on once it verifies; a JSON answer (one message) is read whole, then passed on.
    const holdAll = !sse || (this.listing && status === 200);
    if (!holdAll) res.writeHead(status, responseHeaders(ur.headers, false));
    const splitter = sse ? new SseSplitter() : null;
    ur.on("data", (chunk: Buffer) => {
      this.heldBytes += chunk.length;
      if (holdAll) {
        if (this.heldBytes <= MAX_HELD) this.held.push(chunk);
        return;
      }
      // A streamed answer: each event passes as it arrives; the final one after its call is recorded.
      for (const e of splitter!.push(chunk)) {
        if (this.call && !this.recorded) {
          const final = this.finalOf(e.data);
          if (final) this.recordFinal(final);
        }
        if (!res.write(e.raw)) {
          ur.pause();
          res.once("drain", () => ur.resume());
        }
      }
    });
    ur.on("error", () => {});
    ur.on("end", () => {
      if (!holdAll) {
        const rest = splitter!.rest();
        if (rest.length) res.write(rest);
        if (!this.recorded) this.record(null, "error");
        res.end();
        return;
      }
      if (this.heldBytes > MAX_HELD) {
        this.c.fail(`an MCP answer over ${MAX_HELD} bytes was not passed on`);
        if (this.call) this.record(null, "error");
        rpcError(res, 502, this.c.message?.id, -32603, `the server's answer is over the ${MAX_HELD} bytes the Oxagen gateway holds`);
        return;
      }
      const bytes = Buffer.concat(this.held);
      const messages = sse
        ? new SseSplitter().push(Buffer.concat([bytes, Buffer.from("\n\n")])).map((e) => e.data)
        : [bytes.toString("utf8")];
      const final = messages.map((d) => this.finalOf(d)).find((m) => m !== null) ?? null;
      if (this.listing && status === 200 && !this.catalogVerifies(final)) return;
      if (this.call) this.recordFinal(final);
      res.writeHead(status, responseHeaders(ur.headers, false));
      res.end(bytes);
    });
    ur.on("close", () => {
      if (ur.complete) return;
      this.c.fail("the server closed an MCP answer mid-way");
      if (this.call && !this.recorded) this.record(null, "error");
      res.destroy();
    });
  }

  /** Whether a `tools/list` answer's catalog verifies; when not, the client is answered an error instead. */
  catalogVerifies(final: Record<string, unknown> | null): boolean {
    const result = obj(final?.result);
    if (!result) return true;
    const why = this.c.sink.checkCatalog(result);
    if (why === null) return true;
    const { stats, sink, res, t } = this.c;
    stats.catalog_unverified++;
    this.c.fail(`a tools/list answer was not passed on: ${why}`);
    sink.record(this.session, [mcpAnsweredStep("catalog_unverified", 502)], t, null);
    rpcError(res, 200, this.c.message?.id, -32603, `Oxagen's tool catalog did not verify, so the gateway does not offer it: ${why}`);
    return false;
  }

  /** Records a `tools/call` from its final answer (a result, a JSON-RPC error, or none). */
  recordFinal(final: Record<string, unknown> | null): void {
    const result = obj(final?.result);
    if (!result) {
      this.record(null, "error");
      return;
    }
    this.record(result, result.isError === true ? "error" : "ok");
  }

  /** Once per call: its `tool_call`, or the `policy_decision` of the server's refusal. */
  record(result: Record<string, unknown> | null, status: CarriedToolCall["status"]): void {
    if (!this.call || this.recorded) return;
    this.recorded = true;
    const { sink, stats, t } = this.c;
    const meta = obj(result?._meta);
    const call = ToolCallMeta.safeParse(meta?.[TOOL_META.call]);
    const decision = ToolDecisionMeta.safeParse(meta?.[TOOL_META.decision]);
    stats.calls++;
    stats.last_call_ms = Date.now();
    const callId = call.success ? call.data.call_id : decision.success ? decision.data.call_id : null;
    const toolUseId = this.toolUseId;
    const id = toolUseId ? (chain: string) => gatewayToolCallId(chain, toolUseId) : callId ? `mcp-${callId}` : null;
    if (decision.success) {
      stats.refused++;
      sink.record(this.session, [oxagenRefusalStep(decision.data, this.call.tool, toolUseId)], t, id);
      return;
    }
    const carried: CarriedToolCall = {
      tool: this.call.tool,
      args: this.call.args,
      toolUseId,
      status,
      durationMs: this.elapsed(),
      result,
      callId,
    };
    try {
      sink.record(this.session, [oxagenToolCallStep(carried, sink.retention())], t, id);
    } catch (err) {
      this.c.fail(`a tool call could not be recorded: ${(err as Error).message}`);
    }
  }

  /** The server could not be reached: a call gets a tool error the model can read; anything else a JSON-RPC error. */
  onError(err: Error): void {
    const { res, stats, sink, t } = this.c;
    const where = sink.endpoint().url.origin;
    this.c.fail(`${where}: ${err.message}`);
    if (res.headersSent) {
      res.destroy();
      if (!this.recorded) this.record(null, "error");
      return;
    }
    stats.answered++;
    const why = `Oxagen's tool server (${where}) could not be reached: ${err.message}`;
    if (!this.call) {
      sink.record(this.session, [mcpAnsweredStep("server_unreachable", 502)], t, null);
      rpcError(res, 502, this.c.message?.id, -32603, why);
      return;
    }
    const result = { content: [{ type: "text", text: why }], isError: true };
    this.record(result, "error");
    sendJson(res, 200, { jsonrpc: "2.0", id: this.c.message?.id ?? null, result });
  }
}
