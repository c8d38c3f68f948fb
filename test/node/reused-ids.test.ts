// A vendor that reuses message ids (a local server, a replay) across sessions and within one: every
// call is recorded once, through the gateway, the transcript reader and the rollout reader; only a
// second report of the same call (same chain, id, model and usage) is not counted again (issue 20).
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runIdFor, verifyChain } from "../../protocol/index.ts";
import { anthropic, closeGateways, gateway, MODEL, openai } from "../support/gateway-rig.ts";
import { rig } from "../support/sources.ts";
import { HOST_ID, payloadsOf, type Rig } from "../support/sources.ts";
import { anthropicStream, responsesStream, SSE_HEADERS } from "../support/upstream.ts";

afterEach(closeGateways);

const claudeChain = (session: string) => runIdFor(HOST_ID, "claude-code", session);
const codexChain = (session: string) => runIdFor(HOST_ID, "codex", session);
const calls = (r: Rig, chain: string) =>
  payloadsOf(r.frames(chain), "llm_call").map((c) => [c.path, c.message_id, (c.usage as { input_tokens: number }).input_tokens]);

/** A Claude Code transcript line of one response (no requestId: the vendor sent none). */
function assistant(id: string, input: number, output: number, model = MODEL): string {
  return JSON.stringify({
    type: "assistant",
    timestamp: "2026-12-01T10:00:00Z",
    message: { id, model, role: "assistant", stop_reason: "end_turn", usage: { input_tokens: input, output_tokens: output } },
  });
}
const userLine = JSON.stringify({ type: "user", timestamp: "2026-12-01T10:00:00Z", message: { role: "user", content: "go on" } });

function transcript(lines: string[]): string {
  const path = join(mkdtempSync(join(tmpdir(), "reused-")), "t.jsonl");
  writeFileSync(path, `${lines.join("\n")}\n`);
  return path;
}

function claudeSession(r: Rig, session: string, path: string | null, during: () => Promise<void> = async () => {}) {
  const base = { session_id: session, ...(path ? { transcript_path: path } : {}), cwd: tmpdir() };
  r.event("claude-code", { ...base, hook_event_name: "SessionStart", source: "startup" });
  return during().then(() => {
    r.event("claude-code", { ...base, hook_event_name: "Stop", last_assistant_message: "done" });
    r.event("claude-code", { ...base, hook_event_name: "SessionEnd", reason: "other" });
  });
}

/** The vendor's answer: always message id msg_1, with this input and 5 output tokens. */
const reused = (input: number) => ({
  headers: SSE_HEADERS,
  chunks: anthropicStream({
    id: "msg_1",
    model: MODEL,
    text: "x",
    start: { input_tokens: input, output_tokens: 1 },
    deltas: [{ output_tokens: 5 }],
  }),
});

describe("a vendor reusing message ids: every call recorded, each once", () => {
  it("through the gateway: two sessions, each two calls answered with the same id and usage, are four llm_call frames", async () => {
    const g = await gateway(() => reused(10));
    for (const session of ["reuse-a", "reuse-b"]) {
      await claudeSession(g.r, session, null, async () => {
        for (let i = 0; i < 2; i++)
          await anthropic(g, { "x-claude-code-session-id": session })
            .messages.stream({ model: MODEL, max_tokens: 8, messages: [{ role: "user", content: "hi" }] })
            .finalMessage();
      });
    }
    await g.r.recorder.journal.settled();
    for (const session of ["reuse-a", "reuse-b"]) {
      expect(calls(g.r, claudeChain(session))).toEqual([
        ["gateway", "msg_1", 10],
        ["gateway", "msg_1", 10],
      ]);
      expect(verifyChain(claudeChain(session), g.r.frames(claudeChain(session))).problems).toEqual([]);
    }
  });

  it("through the transcript reader: a reused id within a session and across sessions; a repeated line counts once", async () => {
    const r = rig();
    // Session a: two responses under msg_1 (another usage each) and one line of the second repeated.
    const a = transcript([assistant("msg_1", 100, 5), userLine, assistant("msg_1", 180, 7), assistant("msg_1", 180, 7)]);
    // Session b: the same id and usage as a's first response: another session's call.
    const b = transcript([assistant("msg_1", 100, 5)]);
    await claudeSession(r, "tx-a", a);
    await claudeSession(r, "tx-b", b);
    expect(calls(r, claudeChain("tx-a"))).toEqual([
      ["transcript", "msg_1", 100],
      ["transcript", "msg_1", 180],
    ]);
    expect(calls(r, claudeChain("tx-b"))).toEqual([["transcript", "msg_1", 100]]);
    r.close();
  });

  it("gateway and transcript together: the carried calls are matched once each; a reused id the gateway did not carry is read from the transcript", async () => {
    let n = 0;
    const g = await gateway(() => reused(100 * ++n));
    // The transcript shows both carried calls (as Claude Code writes them) and a third under the same
    // id that never passed the gateway (its base URL pointed elsewhere for a moment).
    const path = transcript([assistant("msg_1", 100, 5), userLine, assistant("msg_1", 200, 5), userLine, assistant("msg_1", 300, 5)]);
    await claudeSession(g.r, "both", path, async () => {
      for (let i = 0; i < 2; i++)
        await anthropic(g, { "x-claude-code-session-id": "both" })
          .messages.stream({ model: MODEL, max_tokens: 8, messages: [{ role: "user", content: "hi" }] })
          .finalMessage();
    });
    expect(calls(g.r, claudeChain("both"))).toEqual([
      ["gateway", "msg_1", 100],
      ["gateway", "msg_1", 200],
      ["transcript", "msg_1", 300],
    ]);
    // Read again after a restart (the saved offsets lost): nothing is matched or recorded twice.
    g.r.recorder.journal.flushSync();
    const again = rig(g.r.dir);
    again.event("claude-code", { session_id: "both", transcript_path: path, hook_event_name: "Stop", last_assistant_message: "x" });
    expect(calls(again, claudeChain("both"))).toHaveLength(3);
    again.close();
  });

  it("through the rollout reader: a response id another session's gateway call carried is this session's call too", async () => {
    const g = await gateway(() => ({
      headers: SSE_HEADERS,
      chunks: responsesStream({ id: "resp_1", model: "gpt-5-codex", text: "x", usage: { input_tokens: 500, output_tokens: 20 } }),
    }));
    const rollout = (session: string) => {
      const line = (type: string, payload: Record<string, unknown>) =>
        JSON.stringify({ timestamp: "2026-12-01T10:00:00.000Z", type, payload });
      const totals = {
        input_tokens: 500,
        cached_input_tokens: 0,
        cache_write_input_tokens: 0,
        output_tokens: 20,
        reasoning_output_tokens: 0,
      };
      return transcript([
        line("session_meta", { id: session }),
        line("turn_context", { model: "gpt-5-codex" }),
        line("token_usage_record", { response_id: "resp_1", thread_token_usage: totals }),
        line("event_msg", { type: "token_count", info: { total_token_usage: totals, last_token_usage: totals } }),
      ]);
    };
    const sessions = ["019b0000-0000-7000-8000-00000000000a", "019b0000-0000-7000-8000-00000000000b"];
    for (const [i, sid] of sessions.entries()) {
      const base = { session_id: sid, transcript_path: rollout(sid), cwd: tmpdir(), model: "gpt-5-codex" };
      g.r.event("codex", { ...base, hook_event_name: "SessionStart", source: "startup" });
      // Only the first session's call passes the gateway.
      if (i === 0) {
        const headers = { "session-id": sid, "x-codex-turn-metadata": JSON.stringify({ session_id: sid }), originator: "codex_exec" };
        for await (const _ of await openai(g, headers).responses.create({ model: "gpt-5-codex", input: "x", stream: true })) {
        }
      }
      g.r.event("codex", { ...base, hook_event_name: "SessionEnd", reason: "exit" });
    }
    expect(calls(g.r, codexChain(sessions[0]!))).toEqual([["gateway", "resp_1", 500]]);
    expect(calls(g.r, codexChain(sessions[1]!))).toEqual([["transcript", "resp_1", 500]]);
  });
});
