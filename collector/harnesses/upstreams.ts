import { UpstreamUrl } from "../../protocol/index.ts";
import { ExitError, UsageError } from "../lib/errors.ts";
import type { HostConfig, HostUpstream } from "../lib/state.ts";
import { headersHidden } from "./claude-code/env.ts";
import { claudeCode } from "./claude-code/config.ts";
import { gatewayUrl, ownClaudeBaseUrl } from "./gateway.ts";
import { readConfig } from "./settings.ts";

// Where the developer's model calls went before the gateway took them (their settings, their shell,
// --upstream), so the gateway sends them on there (host.json `upstreams`), and what of their shell
// the gateway's settings would hide. Used by `tacho enroll --gateway` and `tacho reassign --gateway`.

/** What enroll did with a base URL of the user's own (said in its output). */
export interface UpstreamSaid {
  vendor: "anthropic" | "openai";
  url: string;
  from: string;
  /** Whether it was in a harness's settings file (then tacho wrote the gateway there and unenroll puts it back). */
  replaced: boolean;
}

function validUpstream(url: string, from: string): string {
  if (!UpstreamUrl.safeParse(url).success)
    throw new ExitError(
      1,
      `${from} is ${JSON.stringify(url)}, which the gateway cannot forward to (an http or https URL with no credentials, query or fragment); fix it, or name the upstream with --upstream VENDOR=URL (nothing was written)`,
    );
  return url;
}

/**
 * This computer's own upstreams: `--upstream V=URL` first, then a base URL of the user's own in
 * the settings of a harness being routed through the gateway, then the ones kept before, then the
 * environment `program` runs in (ANTHROPIC_BASE_URL, OPENAI_BASE_URL without its `/v1`).
 */
export function chooseUpstreams(
  program: string,
  flags: string[],
  routed: string[],
  host: Pick<HostConfig, "ports" | "hook_secret">,
  kept: HostConfig["upstreams"],
): { chosen: HostConfig["upstreams"]; said: UpstreamSaid[] } {
  const chosen: NonNullable<HostConfig["upstreams"]> = { ...kept };
  const said: UpstreamSaid[] = [];
  const found = (vendor: "anthropic" | "openai", up: HostUpstream, replaced: boolean) => {
    chosen[vendor] = up;
    said.push({ vendor, ...up, replaced });
  };
  const given = new Set<string>();
  for (const flag of flags) {
    const m = /^(anthropic|openai)=(.+)$/.exec(flag);
    if (!m) throw new UsageError(`--upstream takes VENDOR=URL with VENDOR anthropic or openai, not ${JSON.stringify(flag)}`);
    const vendor = m[1] as "anthropic" | "openai";
    found(vendor, { url: validUpstream(m[2]!, `--upstream ${vendor}`), from: "--upstream" }, false);
    given.add(vendor);
  }
  const ours = gatewayUrl(host);
  const shell = (name: string) => `${name} in the environment ${program} ran in`;
  if (routed.includes("claude-code") && !given.has("anthropic")) {
    const file = readConfig(claudeCode);
    const own = ownClaudeBaseUrl(file, host);
    const env = process.env.ANTHROPIC_BASE_URL;
    if (own !== null) {
      const from = `${file.path} env.ANTHROPIC_BASE_URL`;
      found("anthropic", { url: validUpstream(String(own), from), from }, true);
    } else if (!chosen.anthropic && env && env !== ours) {
      found("anthropic", { url: validUpstream(env, "ANTHROPIC_BASE_URL"), from: shell("ANTHROPIC_BASE_URL") }, false);
    }
  }
  const openai = process.env.OPENAI_BASE_URL;
  if (routed.includes("codex") && !given.has("openai") && !chosen.openai && openai && !openai.startsWith(ours)) {
    // Codex's base URL ends in /v1, and the gateway adds the API's own path (/v1/responses) to its upstream.
    const url = openai.replace(/\/+$/, "").replace(/\/v1$/, "");
    found("openai", { url: validUpstream(url, "OPENAI_BASE_URL"), from: shell("OPENAI_BASE_URL") }, false);
  }
  return { chosen: Object.keys(chosen).length ? chosen : undefined, said };
}

/** The sentence enroll and reassign print for one upstream they chose. */
export function upstreamLine(u: UpstreamSaid): string {
  return u.replaced
    ? `${u.vendor}: your base URL ${u.url} (${u.from}) is now this computer's upstream: the gateway forwards those calls to it; tacho unenroll or reassign --no-gateway puts it back`
    : `${u.vendor}: the gateway forwards those calls to ${u.url} (from ${u.from})`;
}

/**
 * Refuses to point Claude Code at the gateway while the environment's ANTHROPIC_CUSTOM_HEADERS has
 * lines its settings lack: the settings' env, where the gateway's own header line goes, would hide
 * them from every call (the header names are said, never their values).
 */
export function checkShellHeaders(program: string, routed: string[]): void {
  if (!routed.includes("claude-code")) return;
  const file = readConfig(claudeCode);
  const hidden = headersHidden(file, process.env.ANTHROPIC_CUSTOM_HEADERS);
  if (hidden.length === 0) return;
  throw new ExitError(
    1,
    `ANTHROPIC_CUSTOM_HEADERS in the environment ${program} ran in has ${hidden.join(", ")}, which Claude Code would stop sending: the gateway's header goes in its settings' env.ANTHROPIC_CUSTOM_HEADERS, and a variable there replaces the shell's whole. To keep them, add those lines to env.ANTHROPIC_CUSTOM_HEADERS in ${file.path} (tacho keeps them there, its own line after them, and unenroll gives the value back) and run the command again (nothing was written)`,
  );
}
