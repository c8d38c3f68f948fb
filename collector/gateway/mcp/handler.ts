import type { IncomingMessage, ServerResponse } from "node:http";
import { MAX_MCP_REQUEST_BYTES } from "../../../protocol/index.ts";
import { obj } from "../../lib/json.ts";
import { readBody } from "../http.ts";
import { sessionOfHeaders } from "../session.ts";
import { forwardMcp, type McpMessage } from "./forward.ts";
import { mcpAnsweredStep } from "./record.ts";
import { type McpStats, rpcError } from "./rpc.ts";
import type { McpSink } from "./sink.ts";

/** The MCP side of the gateway: what it does with a request for the workspace's tools. */
export interface McpSide {
  /** Answers a request the gateway may not take (without this enrollment's secret, or from a browser page). */
  refuse(res: ServerResponse, status: number, message: string): void;
  handle(req: IncomingMessage, res: ServerResponse, t: number, started: number): void;
}

/**
 * The MCP side (docs/collector.md, "The MCP side"): every request is carried to the workspace's
 * endpoint on the server, host-signed and naming its run; the answer is streamed back as it comes.
 * A `tools/call` is recorded as one `tool_call` (or, refused, one `policy_decision`) on its
 * session's chain; a `tools/list` is passed on only when its signed catalog verifies.
 */
export function mcpSide(sink: McpSink, stats: McpStats): McpSide {
  const fail = (message: string) => {
    stats.last_error = { t: Date.now(), message: message.slice(0, 512) };
    sink.log(`gateway (mcp): ${message}`);
  };
  const refuse = (res: ServerResponse, status: number, message: string) => rpcError(res, status, null, -32001, message);
  return {
    refuse,
    handle(req, res, t, started) {
      if (req.method !== "POST") {
        req.resume();
        rpcError(res, 405, null, -32000, "the Oxagen gateway's MCP endpoint is stateless: POST each message", { allow: "POST" });
        return;
      }
      if (sink.secret() === null) {
        req.resume();
        refuse(res, 401, "this enrollment has no secret for its gateway yet: run tacho enroll --gateway again");
        return;
      }
      const named = sessionOfHeaders(req.headers);
      readBody(req, MAX_MCP_REQUEST_BYTES, (body, size) => {
        if (body === null) {
          stats.answered++;
          sink.record(named, [mcpAnsweredStep("request_too_large", 413)], t, null);
          rpcError(res, 413, null, -32600, `the request is ${size} bytes, over the ${MAX_MCP_REQUEST_BYTES} the Oxagen gateway reads`);
          return;
        }
        let parsed: unknown = null;
        try {
          parsed = JSON.parse(body.toString("utf8"));
        } catch {
          // Not JSON: the server answers it (a parse error); nothing here is a call.
        }
        if (Array.isArray(parsed) && parsed.some((m) => obj(m)?.method === "tools/call")) {
          stats.answered++;
          rpcError(res, 400, null, -32600, "the Oxagen gateway carries a tools/call only as a message of its own, never in a batch");
          return;
        }
        const message = Array.isArray(parsed) ? null : (obj(parsed) as McpMessage | null);
        forwardMcp({ req, res, body, message, named, t, started, sink, stats, fail });
      });
    },
  };
}
