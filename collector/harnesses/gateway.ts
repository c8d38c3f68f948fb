import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { parse } from "smol-toml";
import { ExitError } from "../lib/errors.ts";
import { HOOK_SECRET_HEADER } from "../lib/loopback.ts";
import type { HostConfig } from "../lib/state.ts";
import { claudeEnvText, type EnvContext, type Note, ownBaseUrl } from "./claude-code/env.ts";
import { forgetSetting, noteSetting, settingOf } from "./originals.ts";
import { type ConfigFile, readConfig, writeConfig } from "./settings.ts";
import { claudeCode } from "./claude-code/config.ts";
import { stella } from "./stella/config.ts";
import { stellaRouteText } from "./stella/gateway.ts";
import { claudeMcpServer, claudeMcpServerNow, codexMcpTable, OXAGEN_MCP_SERVER } from "./mcp-server.ts";
import { cutBlock, GATEWAY_BEGIN, GATEWAY_END, parseToml } from "./toml.ts";

/**
 * Pointing a harness's model calls at the gateway (`tacho enroll --gateway`). Claude Code: its
 * settings' `env.ANTHROPIC_BASE_URL`, with the enrollment's secret in `env.ANTHROPIC_CUSTOM_HEADERS`
 * (claude-code/env.ts; a base URL of the user's own there becomes this computer's upstream and is
 * given back with the rest). Codex: a model provider in config.toml (the secret in its
 * `http_headers`), chosen by `model_provider`; another model_provider of the user's own is
 * refused and left as it is. Stella: `providers.anthropic|openai.base_url` in its user settings
 * (stella/gateway.ts). Cursor's model calls go to Cursor's own servers, so it cannot be pointed at
 * it. Removing ours gives the file's bytes back.
 */
export const GATEWAY_HARNESSES = ["claude-code", "codex", "stella"] as const;

/** Why a harness is not pointed at the gateway. */
export const NOT_ROUTED: Record<string, string> = {
  cursor: "Cursor's model calls go to Cursor's servers, not through a local proxy",
};

/** The harnesses routed through the gateway: those already, and with `add` (--gateway) every wrapped one that can be. */
export function gatewayHarnesses(harnesses: string[], already: string[], add: boolean): string[] {
  const can = (h: string) => (GATEWAY_HARNESSES as readonly string[]).includes(h);
  return harnesses.filter((h) => can(h) && (add || already.includes(h)));
}

/** What the settings are made from: the gateway's port and the enrollment's secret. */
export type GatewayHost = Pick<HostConfig, "ports" | "hook_secret">;

export function gatewayUrl(host: Pick<HostConfig, "ports">): string {
  return `http://127.0.0.1:${host.ports.gateway}`;
}

/** What routing (or un-routing) one harness did. */
export interface GatewayResult {
  harness: string;
  config: string;
  changed: boolean;
  /** The workspace's tools as the harness's MCP server `oxagen` (mcp-server.ts), when it is in another file. */
  mcp?: { config: string; changed: boolean };
}

/** What a routing did to the MCP server entry kept in a file of its own (Claude Code's ~/.claude.json), in words; null when it has none. */
export function mcpLine(r: GatewayResult, routed: boolean): string | null {
  if (!r.mcp) return null;
  return routed
    ? `${r.harness}: the workspace's tools as MCP server ${OXAGEN_MCP_SERVER} (${r.mcp.changed ? "set in" : "already in"} ${r.mcp.config})`
    : `${r.harness}: MCP server ${OXAGEN_MCP_SERVER} ${r.mcp.changed ? "removed from" : "was not in"} ${r.mcp.config}`;
}

/** The context claude-code/env.ts edits settings.json in. */
function claudeContext(file: ConfigFile, host: GatewayHost): EnvContext {
  return { file, record: (key) => settingOf(file.path, key), gatewayUrl: gatewayUrl(host), secret: host.hook_secret };
}

/** A base URL of the user's own in Claude Code's settings (not the one tacho wrote), or null. */
export function ownClaudeBaseUrl(file: ConfigFile, host: GatewayHost): unknown {
  return ownBaseUrl(claudeContext(file, host));
}

function applyNotes(path: string, notes: Note[]): void {
  for (const n of notes) {
    if ("forget" in n) forgetSetting(path, n.key);
    else noteSetting(path, n.key, n.before, n.wrote);
  }
}

const PROVIDER = "oxagen-gateway";
const TABLE_BEGIN = "# >>> tacho gateway provider >>>";
const TABLE_END = "# <<< tacho gateway provider <<<";

function codexConfigPath(): string {
  return join(process.env.CODEX_HOME || join(homedir(), ".codex"), "config.toml");
}

function codexText(path: string, text: string | null, host: GatewayHost, on: boolean): string | null {
  const url = on ? gatewayUrl(host) : null;
  const before = text ?? "";
  const bare = cutBlock(cutBlock(before, GATEWAY_BEGIN, GATEWAY_END), TABLE_BEGIN, TABLE_END);
  const theirs = parseToml(path, bare) as {
    model_provider?: unknown;
    model_providers?: Record<string, unknown>;
    mcp_servers?: Record<string, unknown>;
  };
  if (url !== null && theirs.model_provider !== undefined)
    throw new ExitError(
      1,
      `${path}: model_provider is ${JSON.stringify(theirs.model_provider)} already; tacho leaves it as it is. To send Codex's calls through the gateway, remove it and run the command again with --upstream openai=<its base_url without /v1> (its other settings, such as env_key or query_params, are not carried over) (nothing was written)`,
    );
  if (url !== null && theirs.model_providers?.[PROVIDER] !== undefined)
    throw new ExitError(
      1,
      `${path}: [model_providers.${PROVIDER}] is defined outside tacho's block; remove it and run the command again (nothing was written)`,
    );
  if (url !== null && theirs.mcp_servers?.[OXAGEN_MCP_SERVER] !== undefined)
    throw new ExitError(
      1,
      `${path}: [mcp_servers.${OXAGEN_MCP_SERVER}] is there already and tacho did not write it; tacho leaves it as it is. Rename or remove it and run the command again (nothing was written)`,
    );
  let next = bare;
  if (url !== null) {
    const top = `${GATEWAY_BEGIN}\nmodel_provider = "${PROVIDER}"\n${GATEWAY_END}\n`;
    const table = [
      TABLE_BEGIN,
      `[model_providers.${PROVIDER}]`,
      `name = "OpenAI through the Oxagen gateway"`,
      `base_url = ${JSON.stringify(`${url}/v1`)}`,
      `env_key = "OPENAI_API_KEY"`,
      `wire_api = "responses"`,
      ...(host.hook_secret ? [`http_headers = { ${JSON.stringify(HOOK_SECRET_HEADER)} = ${JSON.stringify(host.hook_secret)} }`] : []),
      // The workspace's Oxagen tools, in the same block: removed with it, byte for byte.
      "",
      ...codexMcpTable(host),
      TABLE_END,
    ].join("\n");
    // After a text with no final newline the table has none either: that is how removing it gives that text back.
    next = `${top}${bare === "" ? `${table}\n` : bare.endsWith("\n") ? `${bare}\n${table}\n` : `${bare}\n\n${table}`}`;
    parse(next);
  }
  return next === before ? null : next;
}

/** Points (`on`) or un-points the harness's model calls at the gateway; a harness it cannot point is skipped (see NOT_ROUTED). */
export function routeHarness(host: GatewayHost, harness: string, on: boolean, write = true): GatewayResult | null {
  if (harness === "claude-code") {
    const file = readConfig(claudeCode);
    const { text, notes } = claudeEnvText(claudeContext(file, host), on);
    // Checked before either file is written: an `oxagen` server of the user's own refuses the whole change.
    const mcp = claudeMcpServer(host, on, false);
    if (!write) return { harness, config: file.path, changed: text !== null, mcp };
    // Noted before the file is written: a crash between the two leaves a note of nothing, never a change without its note.
    applyNotes(file.path, notes);
    const changed = writeConfig(file, text);
    return { harness, config: file.path, changed, mcp: claudeMcpServer(host, on) };
  }
  if (harness === "stella") {
    const file = readConfig(stella);
    const { text, notes } = stellaRouteText(file, host, on);
    if (!write) return { harness, config: file.path, changed: text !== null };
    for (const note of notes) note();
    return { harness, config: file.path, changed: writeConfig(file, text) };
  }
  if (harness === "codex") {
    const path = codexConfigPath();
    let text: string | null = null;
    try {
      text = readFileSync(path, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw new ExitError(1, `cannot read ${path}: ${(err as Error).message}`);
    }
    const next = codexText(path, text, host, on);
    const file: ConfigFile = { path, text, json: {}, format: "toml" };
    return { harness, config: path, changed: write ? writeConfig(file, next) : next !== null };
  }
  return null;
}

/** Checks every harness's gateway setting can be written (or removed) before anything is: a refusal names the file. */
export function checkRoutes(host: GatewayHost, on: string[], off: string[]): void {
  for (const h of on) routeHarness(host, h, true, false);
  for (const h of off) routeHarness(host, h, false, false);
}

/** Whether a harness's configuration points its model calls at this enrollment's gateway (tacho status). */
export function routedNow(host: GatewayHost, harness: string): boolean {
  try {
    return routeHarness(host, harness, true, false)?.changed === false;
  } catch {
    return false;
  }
}

/** Whether the harness has the workspace's tools as its MCP server `oxagen` (tacho status); null for a harness that gets none. */
export function mcpServerNow(host: GatewayHost, harness: string): boolean | null {
  if (harness === "claude-code") return claudeMcpServerNow(host);
  // Codex's table is in tacho's gateway block: there exactly when the block is.
  if (harness === "codex") return routedNow(host, harness);
  return null;
}
