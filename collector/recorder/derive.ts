import type { Payload } from "../../protocol/index.ts";
import { redact } from "../../protocol/redact.ts";
import { sha256Hex, utf8 } from "../../protocol/index.ts";

/** A frame derived from a tool's name and input: what the tool was asked to do. */
export type Derived =
  | { kind: "command"; payload: Omit<Payload<"command">, "path"> }
  | { kind: "file_io"; payload: Omit<Payload<"file_io">, "path"> }
  | { kind: "network"; payload: Omit<Payload<"network">, "path"> };

const SHELL_TOOLS =
  /^(?:bash|shell|sh|zsh|run_shell|run_command|run_terminal_cmd|exec|exec_command|local_shell|terminal|powershell|execute_command)$/i;
const FILE_OPS: [RegExp, Payload<"file_io">["op"]][] = [
  [/^(?:read|read_file|readfile|view|cat|open_file|notebookread)$/i, "read"],
  [/^(?:write|write_file|writefile|create_file|create)$/i, "write"],
  [/^(?:edit|multiedit|notebookedit|edit_file|str_replace|str_replace_editor|apply_patch|patch)$/i, "edit"],
  [/^(?:delete|delete_file|rm|remove_file)$/i, "delete"],
  [/^(?:ls|list|list_dir|list_files|glob)$/i, "list"],
  [/^(?:grep|search|search_files|find|codebase_search|grep_search)$/i, "search"],
];
const NETWORK_PROGRAMS = new Set(["curl", "wget", "http", "https", "xh", "httpie"]);
const URL_RE = /\bhttps?:\/\/[^\s"'<>`]+/i;

function str(v: unknown, max = 4096): string | undefined {
  return typeof v === "string" && v.length > 0 && v.length <= max ? v : undefined;
}

function digest(text: string): { sha256: string; size: number } {
  const red = redact(text.toWellFormed()).text;
  return { sha256: sha256Hex(red), size: utf8(red).length };
}

/** The program a shell command runs: its first word, after any VAR=value assignments. */
export function programOf(command: string): string {
  const words = command.trim().split(/\s+/);
  const word = words.find((w) => !/^[A-Za-z_][A-Za-z0-9_]*=/.test(w)) ?? words[0] ?? "";
  const base = word.replace(/^.*\//, "").slice(0, 256);
  return base || "unknown";
}

function network(url: string, toolUseId: string | undefined, method?: string): Derived | null {
  let host: string;
  try {
    host = new URL(url).hostname;
  } catch {
    return null;
  }
  if (!host || host.length > 255) return null;
  const payload: Derived["payload"] & Record<string, unknown> = { host, url: digest(url) };
  if (toolUseId) payload.tool_use_id = toolUseId;
  if (method && method.length <= 16) payload.method = method.toUpperCase();
  return { kind: "network", payload } as Derived;
}

function findUrl(value: unknown, depth = 0): string | undefined {
  if (typeof value === "string") return URL_RE.exec(value)?.[0];
  if (depth > 4 || value === null || typeof value !== "object") return undefined;
  for (const v of Object.values(value)) {
    const hit = findUrl(v, depth + 1);
    if (hit) return hit;
  }
  return undefined;
}

/**
 * The command, file_io and/or network frames for a tool call, from its name and input only: a
 * shell tool gives `command` (and `network` when it runs curl-like programs on a URL), a file tool
 * gives `file_io` with its path, a fetch tool or any URL in the input gives `network`.
 */
export function deriveFrames(toolName: string, input: unknown, toolUseId: string | undefined): Derived[] {
  const obj = input !== null && typeof input === "object" ? (input as Record<string, unknown>) : {};
  const bare = toolName.replace(/^mcp__.*__/, "");
  const command = str(obj.command, 1_000_000) ?? str(obj.cmd, 1_000_000);
  const ref = toolUseId ? { tool_use_id: toolUseId } : {};
  if (SHELL_TOOLS.test(bare) || (command !== undefined && !FILE_OPS.some(([re]) => re.test(bare)))) {
    const text = command ?? JSON.stringify(input ?? null);
    const program = programOf(text);
    const out: Derived[] = [{ kind: "command", payload: { ...ref, program, command: digest(text) } }];
    const url = URL_RE.exec(text)?.[0];
    if (url && NETWORK_PROGRAMS.has(program)) {
      const net = network(url, toolUseId);
      if (net) out.push(net);
    }
    return out;
  }
  const op = FILE_OPS.find(([re]) => re.test(bare))?.[1];
  if (op) {
    const file =
      str(obj.file_path) ??
      str(obj.path) ??
      str(obj.notebook_path) ??
      str(obj.filePath) ??
      str(obj.target_file) ??
      str(obj.pattern) ??
      str(obj.directory);
    if (file) return [{ kind: "file_io", payload: { ...ref, op, file } }];
  }
  const url = str(obj.url) ?? findUrl(input);
  if (url) {
    const net = network(url, toolUseId, str(obj.method, 16));
    if (net) return [net];
  }
  return [];
}
