import type { ServerResponse } from "node:http";
import { sendJson } from "../http.ts";

/** What `tacho status` shows of the MCP side. */
export interface McpStats {
  /** `tools/call` requests carried to the server. */
  calls: number;
  /** Calls the server refused (a decision in the result). */
  refused: number;
  /** `tools/list` results whose signed catalog did not verify (not passed on). */
  catalog_unverified: number;
  /** Requests the gateway answered itself (too large, not POST, a batch with a call, the server unreachable). */
  answered: number;
  last_call_ms: number | null;
  last_error: { t: number; message: string } | null;
}

export function emptyMcpStats(): McpStats {
  return { calls: 0, refused: 0, catalog_unverified: 0, answered: 0, last_call_ms: null, last_error: null };
}

/** A JSON-RPC error answer (the id null when the request's is unknown). */
export function rpcError(res: ServerResponse, status: number, id: unknown, code: number, message: string, headers = {}): void {
  sendJson(res, status, { jsonrpc: "2.0", id: id ?? null, error: { code, message } }, headers);
}
