import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { ExitError } from "../lib/errors.ts";
import { HOOK_SECRET_HEADER, MCP_PATH } from "../lib/loopback.ts";
import type { HostConfig } from "../lib/state.ts";
import { insertChild, memberIndex, removeChild } from "./json-edit.ts";
import { forgetSetting, noteSetting, settingOf } from "./originals.ts";
import { type ConfigFile, writeConfig } from "./settings.ts";

/**
 * The workspace's Oxagen tools as an MCP server of a harness (`tacho enroll --gateway`): the server
 * `oxagen` at the gateway's `/mcp`, with the enrollment's secret as a header. Claude Code: user
 * scope (`mcpServers.oxagen` in `$CLAUDE_CONFIG_DIR/.claude.json`, else `~/.claude.json`, where
 * `claude mcp add --scope user` writes it: no per-project approval). Codex: `[mcp_servers.oxagen]`
 * in config.toml, inside tacho's gateway block (gateway.ts). Never Cursor. An entry of that name
 * the user made is refused, untouched.
 */
export const OXAGEN_MCP_SERVER = "oxagen";

/** The gateway's address of the workspace's MCP tools. */
export function mcpServerUrl(host: Pick<HostConfig, "ports">): string {
  return `http://127.0.0.1:${host.ports.gateway}${MCP_PATH}`;
}

/** Claude Code's user-scope configuration, where its CLI writes `--scope user` MCP servers (checked with 2.1.328). */
export function claudeJsonPath(): string {
  const dir = process.env.CLAUDE_CONFIG_DIR;
  return dir ? join(dir, ".claude.json") : join(homedir(), ".claude.json");
}

/** The entry Claude Code gets. */
export function claudeMcpEntry(host: Pick<HostConfig, "ports" | "hook_secret">): Record<string, unknown> {
  return { type: "http", url: mcpServerUrl(host), ...(host.hook_secret ? { headers: { [HOOK_SECRET_HEADER]: host.hook_secret } } : {}) };
}

/** The Codex table (inside tacho's gateway block of config.toml). */
export function codexMcpTable(host: Pick<HostConfig, "ports" | "hook_secret">): string[] {
  return [
    `[mcp_servers.${OXAGEN_MCP_SERVER}]`,
    `url = ${JSON.stringify(mcpServerUrl(host))}`,
    ...(host.hook_secret ? [`http_headers = { ${JSON.stringify(HOOK_SECRET_HEADER)} = ${JSON.stringify(host.hook_secret)} }`] : []),
  ];
}

const KEY = `mcpServers.${OXAGEN_MCP_SERVER}`;
const PARENT = "mcpServers";

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

function readClaudeJson(path: string): ConfigFile {
  let text: string | null = null;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw new ExitError(1, `cannot read ${path}: ${(err as Error).message}`);
  }
  let json: unknown = {};
  if (text !== null) {
    try {
      json = JSON.parse(text);
    } catch (err) {
      throw new ExitError(
        1,
        `${path} is not valid JSON (${(err as Error).message}); fix it and run the command again (the file was left untouched)`,
      );
    }
    if (!isObject(json)) throw new ExitError(1, `${path} does not hold a JSON object (the file was left untouched)`);
  }
  return { path, text, json: json as Record<string, unknown>, format: "json" };
}

/** What the edit does: the new text (null: nothing changes) and the notes to keep before writing it. */
interface Planned {
  file: ConfigFile;
  text: string | null;
  notes: (() => void)[];
}

function plan(host: Pick<HostConfig, "ports" | "hook_secret">, on: boolean): Planned {
  const file = readClaudeJson(claudeJsonPath());
  const { path, json } = file;
  const servers = json[PARENT];
  if (servers !== undefined && !isObject(servers))
    throw new ExitError(1, `${path}: "${PARENT}" is not an object; fix it and run the command again (the file was left untouched)`);
  const current = servers?.[OXAGEN_MCP_SERVER];
  const record = settingOf(path, KEY);
  const want = claudeMcpEntry(host);
  // Ours: what tacho last wrote there (or exactly what it would write).
  const ours = current !== undefined && ((record !== null && isDeepStrictEqual(current, record.wrote)) || isDeepStrictEqual(current, want));
  const notes: (() => void)[] = [];
  if (!on) {
    if (current === undefined || !ours) {
      // Gone already, or the user made it theirs: nothing of tacho's to take out.
      if (record) notes.push(() => forgetSetting(path, KEY));
      return { file, text: null, notes };
    }
    let text = removeChild(file.text!, [PARENT], memberIndex(file.text!, [PARENT], OXAGEN_MCP_SERVER));
    const parentRecord = settingOf(path, PARENT);
    if (parentRecord && Object.keys(servers!).length === 1) text = removeChild(text, [], memberIndex(text, [], PARENT));
    notes.push(
      () => forgetSetting(path, KEY),
      () => forgetSetting(path, PARENT),
    );
    return { file, text, notes };
  }
  if (current !== undefined && !ours)
    throw new ExitError(
      1,
      `${path}: an MCP server named "${OXAGEN_MCP_SERVER}" is there already and tacho did not write it; tacho leaves it as it is. Rename or remove it and run the command again (nothing was written)`,
    );
  if (current !== undefined && isDeepStrictEqual(current, want)) return { file, text: null, notes };
  notes.push(() => noteSetting(path, KEY, null, want));
  if (servers === undefined) notes.push(() => noteSetting(path, PARENT, null, {}));
  if (file.text === null) return { file, text: `${JSON.stringify({ [PARENT]: { [OXAGEN_MCP_SERVER]: want } }, null, 2)}\n`, notes };
  if (servers === undefined) {
    return { file, text: insertChild(file.text, [], -1, { [OXAGEN_MCP_SERVER]: want }, PARENT), notes };
  }
  let text = file.text;
  if (current !== undefined) text = removeChild(text, [PARENT], memberIndex(text, [PARENT], OXAGEN_MCP_SERVER));
  return { file, text: insertChild(text, [PARENT], -1, want, OXAGEN_MCP_SERVER), notes };
}

/**
 * Adds (`on`) or removes Claude Code's user-scope `oxagen` MCP server; `write: false` only checks.
 * Removing gives the file's bytes back as they were around it (an `mcpServers` tacho added goes too).
 */
export function claudeMcpServer(
  host: Pick<HostConfig, "ports" | "hook_secret">,
  on: boolean,
  write = true,
): { config: string; changed: boolean } {
  const p = plan(host, on);
  if (!write) return { config: p.file.path, changed: p.text !== null };
  // Noted before the file is written: a crash between the two leaves a note of nothing, never a change without its note.
  for (const note of p.notes) note();
  return { config: p.file.path, changed: writeConfig(p.file, p.text) };
}

/** Whether Claude Code's user scope holds this enrollment's `oxagen` server as tacho writes it (tacho status). */
export function claudeMcpServerNow(host: Pick<HostConfig, "ports" | "hook_secret">): boolean {
  try {
    const { json } = readClaudeJson(claudeJsonPath());
    const servers = json[PARENT];
    return isObject(servers) && isDeepStrictEqual(servers[OXAGEN_MCP_SERVER], claudeMcpEntry(host));
  } catch {
    return false;
  }
}
