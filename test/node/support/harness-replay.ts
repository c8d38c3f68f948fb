// Drives a harness's written hook entries as the harness would: the command string from its
// configuration run through `sh -c` with the payload on stdin, against the real recorder.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Policy } from "../../../protocol/index.ts";
import { makeHome, NODE, TACHO, type Home } from "../../support/recorder.ts";
import { collect, type Ran } from "./tacho.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests walk parsed JSON
type Json = Record<string, any>;

export interface HarnessHome extends Home {
  env: Record<string, string>;
  user: string;
}

export const POLICY: Partial<Policy> = {
  tools: [
    { id: "no-rm", tool: "*", command: "rm *", decision: "deny", reason: "no deletes" },
    { id: "ask-push", tool: "*", command: "git push*", decision: "ask", reason: "pushes need a person" },
  ],
};

/** An enrolled state dir wrapping `harnesses`, with their hook entries written by `tacho enroll --harness`. */
export async function harnessHome(harnesses: string[], policy: Partial<Policy> = POLICY): Promise<HarnessHome> {
  const home = await makeHome({ policy });
  const hostPath = join(home.dir, "host.json");
  writeFileSync(hostPath, JSON.stringify({ ...JSON.parse(readFileSync(hostPath, "utf8")), harnesses }));
  const user = mkdtempSync(join(tmpdir(), "oxagen-user-"));
  const env = {
    PATH: process.env.PATH ?? "",
    HOME: user,
    OXAGEN_HOME: home.dir,
    CODEX_HOME: join(user, ".codex"),
    CLAUDE_CONFIG_DIR: join(user, ".claude"),
    TACHO_HOOK_COMMAND: `${NODE} ${TACHO}`,
  };
  const r = await sh(`${NODE} ${TACHO} enroll --no-start --harness ${harnesses.join(",")}`, "", env);
  if (r.code !== 0) throw new Error(`enroll failed: ${r.stderr}`);
  return { ...home, env, user };
}

/** The command our entry runs for an event, read from the written configuration. */
export function writtenCommand(h: HarnessHome, harness: string, event: string): string {
  const path = {
    codex: join(h.user, ".codex/hooks.json"),
    cursor: join(h.user, ".cursor/hooks.json"),
    stella: join(h.user, ".stella/settings.json"),
    "claude-code": join(h.user, ".claude/settings.json"),
  }[harness]!;
  const hooks = (JSON.parse(readFileSync(path, "utf8")) as Json).hooks[event] as Json[] | undefined;
  if (!hooks) throw new Error(`${harness} has no ${event} entry`);
  const handlers = harness === "cursor" ? hooks : hooks.flatMap((g) => g.hooks as Json[]);
  const ours = handlers.find((x) => String(x.command).includes(`hook --harness ${harness}`));
  if (!ours) throw new Error(`no tacho entry for ${harness} ${event}`);
  return String(ours.command);
}

/** What `sh` gives back: exit code and output. */
export type ShRun = Ran;

/** `sh -c command` with `input` on stdin. */
export function sh(command: string, input: string, env: Record<string, string>): Promise<ShRun> {
  return collect("sh", ["-c", command], env, input);
}

/** Fires one event through the written entry; returns the parsed answer (exactly one JSON document, exit 0). */
export async function fire(h: HarnessHome, harness: string, event: string, payload: Json, env: Record<string, string> = {}): Promise<Json> {
  const r = await sh(writtenCommand(h, harness, event), JSON.stringify(payload), { ...h.env, ...env });
  if (r.code !== 0) throw new Error(`hook exited ${r.code}: ${r.stderr}`);
  const lines = r.stdout.trim().split("\n");
  if (lines.length !== 1) throw new Error(`expected one answer line, got ${JSON.stringify(r.stdout)}`);
  return JSON.parse(lines[0]!) as Json;
}
