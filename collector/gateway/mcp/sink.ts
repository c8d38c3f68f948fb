import { fromHex, openToolCatalog, type Policy, ROUTES, toolInputDigest } from "../../../protocol/index.ts";
import { hostAuth } from "../../lib/server.ts";
import type { Recorder } from "../../recorder/recorder.ts";
import type { GatewaySession } from "../session.ts";
import { type GatewaySink, recordPath } from "../sink.ts";

/** Who a tool call is, once tied: its session (null: the computer's own chain) and the harness's id of it. */
export interface ToolTie {
  session: GatewaySession | null;
  toolUseId: string | null;
}

/** What the MCP side needs besides the shared record path: the workspace's endpoint, the host key, the session tie, the catalog check. */
export interface McpSink extends GatewaySink {
  /** The workspace's MCP endpoint: the URL it is called at and the path its signature covers. */
  endpoint(): { url: URL; path: string };
  /** The host-signature headers of a request to the endpoint (protocol/auth.ts). */
  sign(path: string, headers: Record<string, string>, body: Uint8Array): Record<string, string>;
  /**
   * The session of a `tools/call` of `tool` with `args`: the one its headers named, else the one
   * whose harness's PreToolUse for the same tool and arguments just preceded it, else none.
   */
  tie(named: GatewaySession | null, tool: string, args: unknown): ToolTie;
  /** Checks a `tools/list` result's signed catalog (null when it verifies, else why not). */
  checkCatalog(result: Record<string, unknown>): string | null;
  retention(): Policy["retention"] | null;
}

/** The recorder as the MCP side sees it: its host (key, server, workspace), its policy, its chains. */
export function recorderMcpSink(recorder: Recorder, secret: (now?: boolean) => string | null): McpSink {
  const host = recorder.host;
  return {
    ...recordPath(recorder, secret),
    endpoint: () => {
      const path = ROUTES.mcp(host.workspace);
      return { url: new URL(path, host.server), path };
    },
    sign: (path, headers, body) => hostAuth(host, "POST", path, headers, body),
    tie: (named, tool, args) => {
      let sha: string;
      try {
        sha = toolInputDigest(args).sha256;
      } catch {
        return { session: named, toolUseId: null };
      }
      const claimed = recorder.oxagenTools.claim(tool, sha, named);
      return { session: named ?? claimed?.session ?? null, toolUseId: claimed?.toolUseId ?? null };
    },
    checkCatalog: (result) => {
      try {
        // host.server_key follows the server's endorsed key (the policy refresher learns a new one).
        const catalog = openToolCatalog(result, fromHex(host.server_key.pub, 32));
        if (catalog.workspace !== host.workspace) return `the catalog is for workspace ${catalog.workspace}, not ${host.workspace}`;
        if (catalog.caller.kind !== "gateway" || catalog.caller.host !== host.host_id)
          return `the catalog was listed for ${catalog.caller.kind} ${catalog.caller.host ?? catalog.caller.agent ?? "?"}, not this host`;
        return null;
      } catch (err) {
        return (err as Error).message;
      }
    },
    retention: () => recorder.policy?.policy.retention ?? null,
  };
}
