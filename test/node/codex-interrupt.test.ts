// Codex fires Interrupt, not Stop, when a person interrupts a turn: enroll hooks it, and the
// recorder closes the turn on it, answering with nothing Codex would reject.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runIdFor, verifyChain } from "../../protocol/index.ts";
import { HOST, payloads, readJournal, startDaemon, type DaemonProc } from "../support/recorder.ts";
import { fire, harnessHome } from "./support/harness-replay.ts";

const running: DaemonProc[] = [];
afterEach(async () => {
  for (const d of running.splice(0)) {
    d.proc.kill("SIGKILL");
    await d.exited;
  }
});

describe("Codex Interrupt", () => {
  it("is hooked, and an interrupted turn ends with turn_end", async () => {
    const h = await harnessHome(["codex"]);
    const hooks = JSON.parse(readFileSync(join(h.user, ".codex", "hooks.json"), "utf8")).hooks;
    expect(hooks.Interrupt).toEqual([
      { hooks: [expect.objectContaining({ type: "command", command: expect.stringContaining("hook --harness codex") })] },
    ]);
    running.push(await startDaemon(h));
    const base = {
      session_id: "019a7c2e-0000-7e42-9d3c-2b8f6a1c0e44",
      transcript_path: null,
      cwd: "/work/app",
      model: "gpt-5-codex",
      permission_mode: "default",
    };
    const go = (event: string, p: Record<string, unknown>) => fire(h, "codex", event, { ...base, hook_event_name: event, ...p });
    expect(await go("SessionStart", { source: "startup" })).toEqual({});
    expect(await go("UserPromptSubmit", { turn_id: "t1", prompt: "refactor the parser" })).toEqual({});
    expect(await go("Interrupt", { turn_id: "t1" })).toEqual({});
    expect(await go("UserPromptSubmit", { turn_id: "t2", prompt: "never mind, just run the tests" })).toEqual({});
    expect(await go("Stop", { turn_id: "t2", stop_hook_active: false, last_assistant_message: "Tests pass." })).toEqual({});

    const chain = runIdFor(HOST, "codex", base.session_id);
    const view = readJournal(h).get(chain)!;
    expect(verifyChain(chain, view.frames).problems).toEqual([]);
    expect(view.frames.map((f) => f.kind)).toEqual(["agent_start", "turn_start", "turn_end", "turn_start", "turn_end"]);
    const p = payloads(view);
    expect(p[2]).toMatchObject({ turn_id: "t1" });
    expect(p[2]!.message).toBeUndefined();
    expect(p[4]).toMatchObject({ turn_id: "t2", message: expect.any(Object) });
  });
});
