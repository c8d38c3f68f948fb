import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { parse } from "smol-toml";
import { ExitError } from "../lib/errors.ts";
import { HOOK_SECRET_HEADER } from "../recorder/listener.ts";
import type { HostConfig } from "../lib/state.ts";
import { insertChild, memberIndex, removeChild } from "./json-edit.ts";
import { type ConfigFile, readConfig, writeConfig } from "./settings.ts";
import { claudeCode } from "./claude-code/config.ts";
import { parseToml } from "./toml.ts";
import type { JsonObject } from "./types.ts";

/**
 * Pointing a harness's model calls at the gateway (`tacho enroll --gateway`). Claude Code: its
 * settings' `env.ANTHROPIC_BASE_URL`, with the enrollment's secret in `env.ANTHROPIC_CUSTOM_HEADERS`.
 * Codex: a model provider in config.toml (the secret in its `http_headers`), chosen by `model_provider`. Cursor's model calls go to Cursor's own servers and Stella documents no base
 * URL setting, so neither can be pointed at it. A setting of the user's own (a company proxy
 * already in ANTHROPIC_BASE_URL, another model_provider) is refused and left as it is: the
 * workspace policy's `upstreams` is where a proxy goes. Removing ours gives the file's bytes back.
 */
export const GATEWAY_HARNESSES = ["claude-code", "codex"] as const;

/** Why a harness is not pointed at the gateway. */
export const NOT_ROUTED: Record<string, string> = {
  cursor: "Cursor's model calls go to Cursor's servers, not through a local proxy",
  stella: "Stella documents no base URL setting for its model calls",
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
}

const isObject = (v: unknown): v is JsonObject => v !== null && typeof v === "object" && !Array.isArray(v);

/** The settings Claude Code gets: its base URL, and the enrollment's secret as a header on every call. */
function claudeWant(host: GatewayHost): Record<string, string> {
  const want: Record<string, string> = { ANTHROPIC_BASE_URL: gatewayUrl(host) };
  if (host.hook_secret) want.ANTHROPIC_CUSTOM_HEADERS = `${HOOK_SECRET_HEADER}: ${host.hook_secret}`;
  return want;
}

const OURS: Record<string, RegExp> = {
  ANTHROPIC_BASE_URL: /^http:\/\/127\.0\.0\.1:\d+$/,
  ANTHROPIC_CUSTOM_HEADERS: new RegExp(`^${HOOK_SECRET_HEADER}: [0-9a-f]{64}$`),
};

function claudeText(file: ConfigFile, host: GatewayHost, on: boolean): string | null {
  const env = isObject(file.json.env) ? file.json.env : null;
  if (file.json.env !== undefined && !env)
    throw new ExitError(1, `${file.path}: "env" is not an object; fix it and run the command again (the file was left untouched)`);
  for (const [key, ours] of Object.entries(OURS)) {
    const current = env?.[key];
    if (current !== undefined && !(typeof current === "string" && ours.test(current)))
      throw new ExitError(
        1,
        `${file.path}: env.${key} is ${JSON.stringify(current)} already; tacho leaves it as it is. To send Claude Code's calls through the gateway, remove it${key === "ANTHROPIC_BASE_URL" ? " and set the workspace policy's upstreams.anthropic to it" : ""} (nothing was written)`,
      );
  }
  const want = on ? claudeWant(host) : {};
  const keys = Object.keys(OURS);
  if (keys.every((k) => env?.[k] === want[k])) return null;
  if (file.text === null) return `${JSON.stringify({ env: want }, null, 2)}\n`;
  let text = file.text;
  for (const k of keys) if (env?.[k] !== undefined) text = removeChild(text, ["env"], memberIndex(text, ["env"], k));
  const others = Object.keys(env ?? {}).filter((k) => !keys.includes(k));
  if (!on) {
    // The env object tacho added holds nothing else: it goes too.
    return env && others.length === 0 ? removeChild(text, [], memberIndex(text, [], "env")) : text;
  }
  if (!env) return insertChild(text, [], -1, want, "env");
  for (const [k, v] of Object.entries(want)) text = insertChild(text, ["env"], -1, v, k);
  return text;
}

const PROVIDER = "oxagen-gateway";
const TOP_BEGIN = "# >>> tacho gateway: written by tacho enroll --gateway, removed by tacho reassign --no-gateway >>>";
const TOP_END = "# <<< tacho gateway <<<";
const TABLE_BEGIN = "# >>> tacho gateway provider >>>";
const TABLE_END = "# <<< tacho gateway provider <<<";

function codexConfigPath(): string {
  return join(process.env.CODEX_HOME || join(homedir(), ".codex"), "config.toml");
}

function cutBlock(text: string, begin: string, end: string): string {
  const at = text.indexOf(`${begin}\n`);
  if (at < 0) return text;
  const stop = text.indexOf(`${end}\n`, at);
  if (stop < 0)
    throw new ExitError(
      1,
      `the tacho gateway block has no end line (${end}); restore it or remove the block (the file was left untouched)`,
    );
  let from = at;
  const to = stop + end.length + 1;
  // The blank line put before an appended block goes with it.
  if (to === text.length && from >= 2 && text.slice(from - 2, from) === "\n\n") from -= 1;
  return text.slice(0, from) + text.slice(to);
}

function codexText(path: string, text: string | null, host: GatewayHost, on: boolean): string | null {
  const url = on ? gatewayUrl(host) : null;
  const before = text ?? "";
  const bare = cutBlock(cutBlock(before, TOP_BEGIN, TOP_END), TABLE_BEGIN, TABLE_END);
  const theirs = parseToml(path, bare) as { model_provider?: unknown; model_providers?: Record<string, unknown> };
  if (url !== null && theirs.model_provider !== undefined)
    throw new ExitError(
      1,
      `${path}: model_provider is ${JSON.stringify(theirs.model_provider)} already; tacho leaves it as it is. To send Codex's calls through the gateway, remove it (set the workspace policy's upstreams.openai to its base_url) and run the command again (nothing was written)`,
    );
  if (url !== null && theirs.model_providers?.[PROVIDER] !== undefined)
    throw new ExitError(
      1,
      `${path}: [model_providers.${PROVIDER}] is defined outside tacho's block; remove it and run the command again (nothing was written)`,
    );
  let next = bare;
  if (url !== null) {
    const top = `${TOP_BEGIN}\nmodel_provider = "${PROVIDER}"\n${TOP_END}\n`;
    const table = [
      TABLE_BEGIN,
      `[model_providers.${PROVIDER}]`,
      `name = "OpenAI through the Oxagen gateway"`,
      `base_url = ${JSON.stringify(`${url}/v1`)}`,
      `env_key = "OPENAI_API_KEY"`,
      `wire_api = "responses"`,
      ...(host.hook_secret ? [`http_headers = { ${JSON.stringify(HOOK_SECRET_HEADER)} = ${JSON.stringify(host.hook_secret)} }`] : []),
      TABLE_END,
    ].join("\n");
    next = `${top}${bare === "" ? "" : bare.endsWith("\n") ? `${bare}\n` : `${bare}\n\n`}${table}\n`;
    parse(next);
  }
  return next === before ? null : next;
}

/** Points (`on`) or un-points the harness's model calls at the gateway; a harness it cannot point is skipped (see NOT_ROUTED). */
export function routeHarness(host: GatewayHost, harness: string, on: boolean, write = true): GatewayResult | null {
  if (harness === "claude-code") {
    const file = readConfig(claudeCode);
    const text = claudeText(file, host, on);
    return { harness, config: file.path, changed: write ? writeConfig(file, text) : text !== null };
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
