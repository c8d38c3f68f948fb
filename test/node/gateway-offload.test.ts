// A gateway call whose bodies are redacted and hashed on a worker thread (collector/gateway/model/offload.ts):
// its place in the chain and its id are taken when the call ends; anything else written to the chain
// completes it in place first.
import { afterEach, describe, expect, it } from "vitest";
import { runIdFor, verifyChain } from "../../protocol/index.ts";
import { carriedStep, OFFLOAD_BYTES } from "../../collector/gateway/model/offload.ts";
import { type Carried, llmCallStep } from "../../collector/gateway/model/record.ts";
import { Journal } from "../../collector/recorder/journal/index.ts";
import type { Step } from "../../collector/recorder/mapper.ts";
import type { LaterStep } from "../../collector/recorder/gateway-steps.ts";
import { HOST_ID, payloadsOf, rig, type Rig } from "../support/sources.ts";
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const SESSION = "sess-offload-1";
const CHAIN = runIdFor(HOST_ID, "claude-code", SESSION);
const REF = { harness: "claude-code", agent: null, sessionId: SESSION };
const base = { session_id: SESSION, transcript_path: "/nonexistent/t.jsonl", cwd: "/tmp" };
// A credential in the request: redacted before hashing, on whichever thread.
const KEY = "sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";

function carried(id: string, requestBytes = 64): Carried {
  const request = Buffer.from(JSON.stringify({ model: "claude-sonnet-4-5", key: KEY, messages: "x".repeat(requestBytes) }));
  return {
    vendor: "anthropic",
    model: "claude-sonnet-4-5",
    stream: false,
    status: 200,
    latencyMs: 5,
    ttfbMs: 2,
    request,
    response: Buffer.from(JSON.stringify({ id, content: [{ type: "text", text: "hi" }] })),
    seen: { id, model: "claude-sonnet-4-5", usage: { input_tokens: 10, output_tokens: 2 } },
    clientClosed: false,
  };
}

/** A call "on a worker" that answers only when the test says so; counts what this thread prepared. */
function held(c: Carried) {
  let answer: (s: Step) => void = () => {};
  let fail: (e: Error) => void = () => {};
  const counts = { now: 0 };
  const step: LaterStep = {
    now: () => {
      counts.now++;
      return llmCallStep(c, null);
    },
    later: () =>
      new Promise<Step>((resolve, reject) => {
        answer = resolve;
        fail = reject;
      }),
    onError: () => {},
  };
  return { step, counts, answer: (s = llmCallStep(c, null)) => answer(s), fail: (e: Error) => fail(e) };
}

/** A journal id for a carried call (the tests give their own; the gateway derives it from the call's identity). */
const gatewayCallId = (vendor: string, messageId: string) => `gw-${vendor}-${messageId}`;
const tick = () => new Promise((r) => setImmediate(r));
const rigs: Rig[] = [];
afterEach(() => {
  for (const r of rigs.splice(0)) r.close();
});
function started(): Rig {
  const r = rig();
  rigs.push(r);
  r.event("claude-code", { ...base, hook_event_name: "SessionStart", source: "startup" });
  return r;
}
const kinds = (r: Rig) => r.frames(CHAIN).map((f) => f.kind);
const messageIds = (r: Rig) => payloadsOf(r.frames(CHAIN), "llm_call").map((p) => p.message_id);

describe("a carried call the recorder cannot place", () => {
  it("leaves a telemetry_gap naming it on the chain, never nothing, and tells the gateway", () => {
    const r = started();
    const errors: string[] = [];
    const broken = {
      now: (): never => {
        throw new Error("the frame is over the limit");
      },
      later: () => null,
      onError: (err: Error) => errors.push(err.message),
    };
    expect(r.recorder.recordGateway(REF, broken, r.clock.now, "gw-broken")).toBe(false);
    expect(errors).toEqual(["the frame is over the limit"]);
    expect(kinds(r)).toEqual(["agent_start", "telemetry_gap"]);
    expect(payloadsOf(r.frames(CHAIN), "telemetry_gap")[0]).toMatchObject({
      path: "gateway",
      cause: "other",
      detail: "a model call the gateway carried could not be recorded: the frame is over the limit",
    });
  });
});

describe("a gateway call prepared off the event loop", () => {
  it("takes its id at once: the dedupe sees it while it is prepared, and the same call is not recorded twice", async () => {
    const r = started();
    const id = gatewayCallId("anthropic", "msg_1");
    const h = held(carried("msg_1"));
    expect(r.recorder.recordGateway(REF, h.step, r.clock.now, id)).toBe(true);
    const rec = r.recorder.journal.chains.get(CHAIN)!;
    expect(rec.preparing).toHaveLength(1);
    expect(r.recorder.journal.has(id)).toBe(true);
    // Nothing is on the chain yet.
    expect(rec.writer.state.count).toBe(1);
    // The same response again (a retried record): refused by its id.
    expect(r.recorder.recordGateway(REF, held(carried("msg_1")).step, r.clock.now, id)).toBe(false);
    h.answer();
    await r.recorder.journal.settled();
    expect(h.counts.now).toBe(0);
    expect(kinds(r)).toEqual(["agent_start", "llm_call"]);
    expect(messageIds(r)).toEqual(["msg_1"]);
  });

  it("a hook arriving while the call is on the worker: the llm_call is completed in place first, the worker's later answer is discarded", async () => {
    const r = started();
    const h = held(carried("msg_2"));
    const t = r.clock.now;
    r.recorder.recordGateway(REF, h.step, t, gatewayCallId("anthropic", "msg_2"));
    r.clock.now = t + 1000;
    r.event("claude-code", { ...base, hook_event_name: "UserPromptSubmit", prompt: "next" });
    expect(h.counts.now).toBe(1);
    expect(r.recorder.journal.chains.get(CHAIN)!.preparing).toEqual([]);
    // The worker answers late (and differently): nothing is added.
    h.answer({ ...llmCallStep(carried("msg_2"), null), payload: { bogus: true } });
    await tick();
    await r.recorder.journal.settled();
    const frames = r.frames(CHAIN);
    expect(frames.map((f) => f.kind)).toEqual(["agent_start", "llm_call", "turn_start"]);
    // The call's frame keeps its own time, before the hook's.
    expect(frames[1]!.t).toBe(t);
    expect(frames[2]!.t).toBe(t + 1000);
    expect(verifyChain(CHAIN, frames).problems).toEqual([]);
  });

  it("calls complete in the order they ended, whichever worker answers first; a small call waits its turn behind them", async () => {
    const r = started();
    const a = held(carried("msg_a"));
    const b = held(carried("msg_b"));
    r.recorder.recordGateway(REF, a.step, r.clock.now, gatewayCallId("anthropic", "msg_a"));
    r.recorder.recordGateway(REF, b.step, r.clock.now, gatewayCallId("anthropic", "msg_b"));
    // Small: prepared here, but queued behind the two still on workers.
    r.recorder.recordGateway(
      REF,
      carriedStep(carried("msg_c"), null, () => {}),
      r.clock.now,
      gatewayCallId("anthropic", "msg_c"),
    );
    const rec = r.recorder.journal.chains.get(CHAIN)!;
    expect(rec.preparing).toHaveLength(3);
    b.answer();
    await tick();
    expect(rec.writer.state.count).toBe(1);
    a.answer();
    await r.recorder.journal.settled();
    expect([a.counts.now, b.counts.now]).toEqual([0, 0]);
    expect(messageIds(r)).toEqual(["msg_a", "msg_b", "msg_c"]);
  });

  it("a worker that fails: the call is prepared on this thread instead", async () => {
    const r = started();
    const h = held(carried("msg_f"));
    r.recorder.recordGateway(REF, h.step, r.clock.now, gatewayCallId("anthropic", "msg_f"));
    h.fail(new Error("worker died"));
    await r.recorder.journal.settled();
    expect(h.counts.now).toBe(1);
    expect(messageIds(r)).toEqual(["msg_f"]);
  });

  it("the chain going final (SessionEnd) completes pending calls first: no llm_call after the end", () => {
    const r = started();
    const h = held(carried("msg_end"));
    r.recorder.recordGateway(REF, h.step, r.clock.now, gatewayCallId("anthropic", "msg_end"));
    r.event("claude-code", { ...base, hook_event_name: "SessionEnd", reason: "other" });
    const k = kinds(r);
    expect(k.filter((x) => x === "llm_call")).toHaveLength(1);
    expect(k.indexOf("llm_call")).toBeLessThan(k.indexOf("agent_stop"));
    expect(k.at(-1)).toBe("agent_stop");
    expect(r.recorder.journal.chains.get(CHAIN)!.writer.state.final).toBe(true);
    h.answer();
  });

  it("a periodic lock completes pending calls first, and covers them", () => {
    const r = started();
    const h = held(carried("msg_lock"));
    r.recorder.recordGateway(REF, h.step, r.clock.now, gatewayCallId("anthropic", "msg_lock"));
    expect(r.recorder.lockAll(r.clock.now)).toBe(1);
    const rec = r.recorder.journal.chains.get(CHAIN)!;
    expect(h.counts.now).toBe(1);
    // Durable now (a lock covers only durable frames), and the lock is the chain's last entry.
    expect(rec.frames.map((f) => f.kind)).toEqual(["agent_start", "llm_call"]);
    expect(rec.deferred).toEqual([]);
    expect(rec.locks).toHaveLength(1);
    expect(rec.writer.dirty).toBe(false);
    h.answer();
  });

  it("stop with calls still on the worker: closing the journal completes them in place; they are on disk after a restart", () => {
    const r = rig();
    r.event("claude-code", { ...base, hook_event_name: "SessionStart", source: "startup" });
    const h = held(carried("msg_stop"));
    const id = gatewayCallId("anthropic", "msg_stop");
    r.recorder.recordGateway(REF, h.step, r.clock.now, id);
    r.close();
    expect(h.counts.now).toBe(1);
    const again = new Journal(join(r.dir, "journal"));
    const back = again.chains.get(CHAIN)!;
    expect(back.frames.map((f) => f.kind)).toEqual(["agent_start", "llm_call"]);
    expect(again.has(id)).toBe(true);
    again.close();
  });

  it("compaction completes pending calls first: the snapshot never holds an id without its frame", () => {
    const r = started();
    const id = gatewayCallId("anthropic", "msg_snap");
    const h = held(carried("msg_snap"));
    r.recorder.recordGateway(REF, h.step, r.clock.now, id);
    const rec = r.recorder.journal.chains.get(CHAIN)!;
    r.recorder.journal.compact(rec);
    expect(h.counts.now).toBe(1);
    expect(rec.preparing).toEqual([]);
    expect(messageIds(r)).toEqual(["msg_snap"]);
  });

  it("the real worker: a large call's llm_call is the one this thread makes (same redaction, same digests), and none is made here", async () => {
    const r = started();
    const c = carried("msg_big", OFFLOAD_BYTES * 4);
    const real = carriedStep(c, null, () => {});
    let here = 0;
    const spy: LaterStep = {
      ...real,
      now: () => {
        here++;
        return real.now();
      },
    };
    r.recorder.recordGateway(REF, spy, r.clock.now, gatewayCallId("anthropic", "msg_big"));
    expect(r.recorder.journal.chains.get(CHAIN)!.preparing).toHaveLength(1);
    await r.recorder.journal.settled();
    expect(here).toBe(0);
    const [frame] = payloadsOf(r.frames(CHAIN), "llm_call");
    const local = llmCallStep(c, null);
    expect(frame).toEqual(JSON.parse(JSON.stringify(local.payload)));
    expect((frame!.redactions as unknown[]).length).toBeGreaterThan(0);
    const body = r.recorder.journal.body((local.payload.request as { sha256: string }).sha256);
    expect(body?.toString()).not.toContain(KEY);
    expect(body?.equals(Buffer.from(local.bodies[0]!.bytes!))).toBe(true);
  });
});

describe("the body worker and the process", () => {
  it("a process that had a call prepared on the worker still exits on its own (a stopped recorder does not stay up)", () => {
    const script = `
      import { carriedStep } from ${JSON.stringify(join(import.meta.dirname, "../../collector/gateway/model/offload.ts"))};
      const request = Buffer.from(JSON.stringify({ model: "claude-sonnet-4-5", messages: "x".repeat(${OFFLOAD_BYTES * 2}) }));
      const call = { vendor: "anthropic", model: "claude-sonnet-4-5", stream: false, status: 200, latencyMs: 1, ttfbMs: 1, request,
        response: Buffer.from("{}"), seen: { id: "msg_exit", model: "claude-sonnet-4-5", usage: { input_tokens: 1, output_tokens: 1 } }, clientClosed: false };
      // The recorder's listeners keep it up while a call is on the worker; here, a timer until the answer.
      const keep = setInterval(() => {}, 1000);
      const step = await carriedStep(call, null, () => {}).later();
      clearInterval(keep);
      console.log(step.kind);
    `;
    const file = join(mkdtempSync(join(tmpdir(), "oxagen-offload-")), "exit.mjs");
    writeFileSync(file, script);
    const child = spawnSync(process.execPath, [file], { encoding: "utf8", timeout: 60_000 });
    expect(child.stderr).toBe("");
    expect(child.stdout.trim()).toBe("llm_call");
    // Killed by the timeout (signal set, status null) when the worker's port kept the process up.
    expect(child.signal).toBeNull();
    expect(child.status).toBe(0);
  });
});
