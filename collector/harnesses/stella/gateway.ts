import { isDeepStrictEqual } from "node:util";
import { ExitError } from "../../lib/errors.ts";
import type { HostConfig } from "../../lib/state.ts";
import { SECRET_PATH } from "../../lib/loopback.ts";
import { insertChild, memberIndex, removeChild } from "../json-edit.ts";
import { forgetSetting, noteSetting, settingOf } from "../originals.ts";
import type { ConfigFile } from "../settings.ts";
import { cutBlock, GATEWAY_BEGIN, GATEWAY_END, parseToml } from "../toml.ts";

// Stella's model calls go to `providers.<id>.base_url` of its user settings (`~/.stella/settings.json`,
// or `stella.toml` beside it, which wins: macanderson/stella crates/stella-cli/src/settings.rs
// `ProviderSettings`, an entry whose id is a built-in overriding its defaults). Its Anthropic adapter
// posts `{base_url}/v1/messages` (crates/stella-model/src/anthropic.rs), its OpenAI one
// `{base_url}/responses` under `https://api.openai.com/v1` (crates/stella-cli/src/config/providers.rs).
// A provider entry has no header setting, so the enrollment's secret travels as the first segment of
// the path the gateway is given (`/k/<secret>`, taken off by the gateway before anything is forwarded).

/** The base URL Stella gets for a provider (the gateway, with the secret in the path). */
export function stellaBaseUrls(host: Pick<HostConfig, "ports" | "hook_secret">): Record<"anthropic" | "openai", string> {
  const base = `http://127.0.0.1:${host.ports.gateway}${host.hook_secret ? `${SECRET_PATH}${host.hook_secret}` : ""}`;
  return { anthropic: base, openai: `${base}/v1` };
}

const PROVIDERS = ["anthropic", "openai"] as const;
const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

function refuseOwn(path: string, id: string, value: unknown): never {
  throw new ExitError(
    1,
    `${path}: providers.${id}.base_url is ${JSON.stringify(value)} already; tacho leaves it as it is. To send Stella's calls through the gateway, remove it and run the command again with --upstream ${id}=<that URL> (nothing was written)`,
  );
}

/** stella.toml: our `[providers.*]` tables as one marked block; a provider table of the user's own is refused. */
function tomlText(file: ConfigFile, host: Pick<HostConfig, "ports" | "hook_secret">, on: boolean): string | null {
  const before = file.text ?? "";
  const bare = cutBlock(before, GATEWAY_BEGIN, GATEWAY_END);
  if (!on) return bare === before ? null : bare;
  const theirs = parseToml(file.path, bare) as { providers?: Record<string, unknown> };
  for (const id of PROVIDERS)
    if (theirs.providers?.[id] !== undefined)
      throw new ExitError(
        1,
        `${file.path}: [providers.${id}] is there already; tacho leaves it as it is (write its base_url in settings.json, or remove it and run the command again with --upstream ${id}=<its base_url>) (nothing was written)`,
      );
  const urls = stellaBaseUrls(host);
  const block = [
    GATEWAY_BEGIN,
    ...PROVIDERS.flatMap((id) => [`[providers.${id}]`, `base_url = ${JSON.stringify(urls[id])}`]),
    GATEWAY_END,
  ].join("\n");
  const next = bare === "" ? `${block}\n` : bare.endsWith("\n") ? `${bare}\n${block}\n` : `${bare}\n\n${block}\n`;
  parseToml(file.path, next);
  return next === before ? null : next;
}

/** What routing Stella's settings.json does: the new text and the notes to keep first. */
function jsonText(
  file: ConfigFile,
  host: Pick<HostConfig, "ports" | "hook_secret">,
  on: boolean,
): { text: string | null; notes: (() => void)[] } {
  const { path, json } = file;
  const urls = stellaBaseUrls(host);
  const notes: (() => void)[] = [];
  const providers = json.providers;
  if (providers !== undefined && !isObject(providers))
    throw new ExitError(1, `${path}: "providers" is not an object; fix it and run the command again (the file was left untouched)`);
  let text = file.text ?? "{}";
  let changed = false;
  if (!on) {
    for (const id of [...PROVIDERS].reverse()) {
      const key = `providers.${id}.base_url`;
      const record = settingOf(path, key);
      const entry = providers?.[id];
      const value = isObject(entry) ? entry.base_url : undefined;
      if (!record) continue;
      notes.push(
        () => forgetSetting(path, key),
        () => forgetSetting(path, `providers.${id}`),
      );
      // Changed by the user after enroll: theirs now.
      if (value === undefined || !isDeepStrictEqual(value, record.wrote)) continue;
      text = removeChild(text, ["providers", id], memberIndex(text, ["providers", id], "base_url"));
      changed = true;
      const left = JSON.parse(text) as { providers: Record<string, Record<string, unknown>> };
      if (settingOf(path, `providers.${id}`) && Object.keys(left.providers[id]!).length === 0)
        text = removeChild(text, ["providers"], memberIndex(text, ["providers"], id));
    }
    const after = JSON.parse(text) as { providers?: Record<string, unknown> };
    if (changed && settingOf(path, "providers") && after.providers && Object.keys(after.providers).length === 0) {
      text = removeChild(text, [], memberIndex(text, [], "providers"));
      notes.push(() => forgetSetting(path, "providers"));
    }
    return { text: changed ? text : null, notes };
  }
  if (providers === undefined) {
    notes.push(() => noteSetting(path, "providers", null, {}));
    for (const id of PROVIDERS)
      notes.push(
        () => noteSetting(path, `providers.${id}`, null, {}),
        () => noteSetting(path, `providers.${id}.base_url`, null, urls[id]),
      );
    const fresh = Object.fromEntries(PROVIDERS.map((id) => [id, { base_url: urls[id] }]));
    return {
      text: file.text === null ? `${JSON.stringify({ providers: fresh }, null, 2)}\n` : insertChild(text, [], -1, fresh, "providers"),
      notes,
    };
  }
  for (const id of PROVIDERS) {
    const key = `providers.${id}.base_url`;
    const entry = providers[id];
    if (entry !== undefined && !isObject(entry))
      throw new ExitError(1, `${path}: providers.${id} is not an object (the file was left untouched)`);
    const value = entry?.base_url;
    const record = settingOf(path, key);
    if (value === urls[id]) continue;
    if (value !== undefined && !(record && isDeepStrictEqual(value, record.wrote))) refuseOwn(path, id, value);
    notes.push(() => noteSetting(path, key, null, urls[id]));
    if (entry === undefined) {
      notes.push(() => noteSetting(path, `providers.${id}`, null, {}));
      text = insertChild(text, ["providers"], -1, { base_url: urls[id] }, id);
    } else {
      if (value !== undefined) text = removeChild(text, ["providers", id], memberIndex(text, ["providers", id], "base_url"));
      text = insertChild(text, ["providers", id], -1, urls[id], "base_url");
    }
    changed = true;
  }
  return { text: changed ? text : null, notes };
}

/** Stella's settings with its model calls pointed at the gateway (`on`) or given back, and the originals to note before writing them. */
export function stellaRouteText(
  file: ConfigFile,
  host: Pick<HostConfig, "ports" | "hook_secret">,
  on: boolean,
): { text: string | null; notes: (() => void)[] } {
  return file.format === "toml" ? { text: tomlText(file, host, on), notes: [] } : jsonText(file, host, on);
}
