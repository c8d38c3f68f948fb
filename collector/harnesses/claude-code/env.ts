import { isDeepStrictEqual } from "node:util";
import { ExitError } from "../../lib/errors.ts";
import { HOOK_SECRET_HEADER } from "../../lib/loopback.ts";
import { memberText, setMemberText } from "../json-edit.ts";
import { beforeOf, type Setting } from "../originals.ts";
import type { ConfigFile } from "../settings.ts";
import type { JsonObject } from "../types.ts";

// Claude Code's model calls go to `env.ANTHROPIC_BASE_URL` in its settings.json, with our secret in
// `env.ANTHROPIC_CUSTOM_HEADERS` (newline-separated `Name: Value` lines). tacho writes both in place
// and notes what each held before, so taking the gateway away gives the old text back: a base URL of
// the user's own (which the gateway then forwards to, see ownBaseUrl), their own headers (kept, with
// our line after them), or nothing.

const BASE = "ANTHROPIC_BASE_URL";
const HEADERS = "ANTHROPIC_CUSTOM_HEADERS";
const OUR_LINE = new RegExp(`^${HOOK_SECRET_HEADER}:`, "i");

/** What a change to settings.json does to the record of originals (see originals.ts). */
export type Note = { key: string; before: string | null; wrote: unknown } | { key: string; forget: true };

/** The settings' env, what tacho noted about it, and the gateway's wanted values. */
export interface EnvContext {
  file: ConfigFile;
  /** The originals noted for this file, by key (`env`, `env.ANTHROPIC_BASE_URL`, …). */
  record: (key: string) => Setting | null;
  gatewayUrl: string;
  secret: string | undefined;
}

const isObject = (v: unknown): v is JsonObject => v !== null && typeof v === "object" && !Array.isArray(v);

function envOf(file: ConfigFile): JsonObject | null {
  if (file.json.env === undefined) return null;
  if (!isObject(file.json.env))
    throw new ExitError(1, `${file.path}: "env" is not an object; fix it and run the command again (the file was left untouched)`);
  return file.json.env;
}

/** Lines of a headers value without our secret's line. */
function theirLines(value: unknown): string[] {
  return typeof value === "string" ? value.split("\n").filter((l) => l.trim() !== "" && !OUR_LINE.test(l.trim())) : [];
}

/** Whether the base URL in the settings is the one tacho wrote (this enrollment's gateway, or what it noted). */
function baseIsOurs(ctx: EnvContext, value: unknown): boolean {
  const record = ctx.record(`env.${BASE}`);
  return value === ctx.gatewayUrl || (record !== null && isDeepStrictEqual(value, record.wrote));
}

/** A base URL of the user's own in the settings (one tacho did not write), or null. */
export function ownBaseUrl(ctx: EnvContext): unknown {
  const value = envOf(ctx.file)?.[BASE];
  return value === undefined || baseIsOurs(ctx, value) ? null : value;
}

/**
 * The header names in `shell` (the environment's ANTHROPIC_CUSTOM_HEADERS) that the settings do not
 * carry. Claude Code's settings `env` replaces a variable of the shell's whole (seen with the real
 * CLI), so once tacho writes its header line there, these lines no longer reach the vendor.
 */
export function headersHidden(file: ConfigFile, shell: string | undefined): string[] {
  const inSettings = new Set(theirLines(envOf(file)?.[HEADERS]).map((l) => l.trim()));
  return theirLines(shell)
    .filter((l) => !inSettings.has(l.trim()))
    .map((l) => l.split(":")[0]!.trim());
}

/** settings.json's text with the gateway's settings in it (`on`) or given back; null when nothing changes. */
export function claudeEnvText(ctx: EnvContext, on: boolean): { text: string | null; notes: Note[] } {
  const { file } = ctx;
  const env = envOf(file);
  const notes: Note[] = [];
  if (on) {
    const headers = [...theirLines(env?.[HEADERS]), ...(ctx.secret ? [`${HOOK_SECRET_HEADER}: ${ctx.secret}`] : [])].join("\n");
    const want: JsonObject = { [BASE]: ctx.gatewayUrl, ...(headers ? { [HEADERS]: headers } : {}) };
    if (env && Object.entries(want).every(([k, v]) => env[k] === v)) return { text: null, notes };
    if (file.text === null) {
      for (const [k, v] of Object.entries(want)) notes.push({ key: `env.${k}`, before: null, wrote: v });
      return { text: `${JSON.stringify({ env: want }, null, 2)}\n`, notes };
    }
    let text = file.text;
    if (!env) {
      text = setMemberText(text, [], "env", "{}");
      notes.push({ key: "env", before: null, wrote: {} });
    }
    for (const [k, v] of Object.entries(want)) {
      if (env?.[k] === v) continue;
      const key = `env.${k}`;
      const was = env ? memberText(file.text, ["env"], k) : null;
      // The headers' first text is kept: what the user adds later is in the value given back anyway.
      const before = k === HEADERS ? (ctx.record(key)?.before ?? was) : beforeOf(ctx.record(key), env?.[k], was);
      notes.push({ key, before, wrote: v });
      text = setMemberText(text, ["env"], k, JSON.stringify(v));
    }
    return { text, notes };
  }
  if (!env || file.text === null) return { text: null, notes };
  let text = file.text;
  const base = ctx.record(`env.${BASE}`);
  if (env[BASE] !== undefined && baseIsOurs(ctx, env[BASE])) text = setMemberText(text, ["env"], BASE, base?.before ?? null);
  if (base) notes.push({ key: `env.${BASE}`, forget: true });
  const headers = ctx.record(`env.${HEADERS}`);
  if (typeof env[HEADERS] === "string" && theirLines(env[HEADERS]).join("\n") !== env[HEADERS]) {
    const left = theirLines(env[HEADERS]).join("\n");
    const given = headers?.before !== null && headers?.before !== undefined && JSON.parse(headers.before) === left;
    text = setMemberText(text, ["env"], HEADERS, given ? headers!.before : left === "" ? null : JSON.stringify(left));
  }
  if (headers) notes.push({ key: `env.${HEADERS}`, forget: true });
  const envRecord = ctx.record("env");
  const after = JSON.parse(text) as JsonObject;
  // An env object tacho added (or, from a collector before the record of originals, one left empty by it) goes too.
  const legacy = !base && !headers && Object.keys(env).length > 0;
  if (isObject(after.env) && Object.keys(after.env).length === 0 && (envRecord?.before === null || legacy))
    text = setMemberText(text, [], "env", null);
  if (envRecord) notes.push({ key: "env", forget: true });
  return { text: text === file.text ? null : text, notes };
}
