import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { request } from "node:http";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { defaultPolicy, type Policy, runIdFor, sha256Hex, verifyChain } from "../../protocol/index.ts";
import { emptyStats, gatewayHandler, recorderSink } from "../../collector/gateway/index.ts";
import { BudgetLeases, type LeaseReply } from "../../collector/gateway/lease.ts";
import { llmCallStep } from "../../collector/gateway/model/record.ts";
import { callKey, nextCarriedId } from "../../collector/recorder/carried.ts";
import { claudeUsage } from "../../collector/recorder/sources/claude.ts";
import { listenLoopback } from "../../collector/lib/loopback.ts";
import { redact } from "../../protocol/redact.ts";
import { AGENT, anthropic, CLAUDE, closeGateways, gateway, HOST_CHAIN, MODEL, openai, raw, SESSION } from "../support/gateway-rig.ts";
import { freePort } from "../support/recorder.ts";
import { HOST_ID, payloadsOf, rig } from "../support/sources.ts";
import {
  anthropicMessage,
  anthropicStream,
  chatStream,
  type Json,
  responsesStream,
  SSE_HEADERS,
  startUpstream,
} from "../support/upstream.ts";

afterEach(closeGateways);

const START = { input_tokens: 120, cache_creation_input_tokens: 40, cache_read_input_tokens: 900, output_tokens: 1 };

describe("gateway: Anthropic Messages through the official SDK", () => {
  it("a non-streamed call: forwarded with the caller's key, answered as the vendor answered, one llm_call on the session's run with usage, hashes, bodies", async () => {
    const body = anthropicMessage({
      id: "msg_json_1",
      model: MODEL,
      text: "hello",
      usage: { input_tokens: 12, output_tokens: 5, cache_read_input_tokens: 3, cache_creation_input_tokens: 0 },
    });
    const g = await gateway(() => ({ headers: { "content-type": "application/json", "request-id": "req_abc" }, chunks: [body] }));
    const msg = await anthropic(g).messages.create({ model: MODEL, max_tokens: 64, messages: [{ role: "user", content: "hi" }] });
    expect(msg.id).toBe("msg_json_1");
    expect(g.up.seen[0]!.headers.authorization).toBe("Bearer sk-ant-api03-test-key-not-real");
    expect(g.up.seen[0]!.headers["x-claude-code-session-id"]).toBe(SESSION);
    const [call, ...more] = g.llm();
    expect(more).toEqual([]);
    expect(call).toMatchObject({
      path: "gateway",
      vendor: "anthropic",
      model: MODEL,
      forwarded: true,
      status: 200,
      stream: false,
      message_id: "msg_json_1",
      request_id: "req_abc",
      usage: { input_tokens: 12, output_tokens: 5, cache_read_tokens: 3, cache_write_tokens: 0 },
    });
    expect(call!.response).toEqual({ sha256: sha256Hex(body), size: Buffer.byteLength(body) });
    expect(call!.request).toEqual({ sha256: sha256Hex(g.up.seen[0]!.raw), size: g.up.seen[0]!.raw.length });
    expect(typeof call!.latency_ms).toBe("number");
    expect(typeof call!.ttfb_ms).toBe("number");
    const bodies = call!.bodies as { role: string; sha256: string; kept: boolean }[];
    expect(bodies.map((b) => [b.role, b.kept])).toEqual([
      ["llm_request", true],
      ["llm_response", true],
    ]);
    expect(readFileSync(join(g.r.dir, "journal", "bodies", bodies[1]!.sha256), "utf8")).toBe(body);
    expect(verifyChain(CLAUDE, g.r.frames(CLAUDE)).problems).toEqual([]);
    expect(g.stats.carried).toBe(1);
  });

  it("a streamed call with a tool: the client gets the vendor's bytes unchanged; usage is message_start's input and cache with the last cumulative output", async () => {
    const stream1 = (id: string) =>
      anthropicStream({ id, model: MODEL, text: "let me look", start: START, deltas: [{ output_tokens: 30 }] });
    let n = 0;
    const g = await gateway(() => ({ headers: SSE_HEADERS, chunks: stream1(`msg_s${++n}`) }));
    const direct = Buffer.from(stream1("msg_s1").join(""));
    const got = await raw(
      g.url,
      "/v1/messages?beta=true",
      { model: MODEL, max_tokens: 64, stream: true, messages: [] },
      { "x-claude-code-session-id": SESSION },
    );
    expect(got.bytes.equals(direct)).toBe(true);
    const stream = anthropic(g).messages.stream({ model: MODEL, max_tokens: 64, messages: [{ role: "user", content: "hi" }] });
    const final = await stream.finalMessage();
    expect(final.usage.output_tokens).toBe(30);
    const calls = g.llm();
    expect(calls).toHaveLength(2);
    expect(calls.map((c) => c.message_id)).toEqual(["msg_s1", "msg_s2"]);
    for (const c of calls)
      expect(c).toMatchObject({
        stream: true,
        usage: { input_tokens: 120, output_tokens: 30, cache_read_tokens: 900, cache_write_tokens: 40 },
      });
    expect(g.up.seen[0]!.path).toBe("/v1/messages?beta=true");
  });

  it("usage gallery: several cumulative message_deltas keep the latest (never a sum); a delta's own input and cache fields replace message_start's", async () => {
    const several = anthropicStream({
      id: "msg_g1",
      model: MODEL,
      text: "x",
      start: START,
      deltas: [{ output_tokens: 10 }, { output_tokens: 25 }, { output_tokens: 40 }],
    });
    const withInput = anthropicStream({
      id: "msg_g2",
      model: MODEL,
      text: "x",
      start: { input_tokens: 0, output_tokens: 1 },
      deltas: [{ input_tokens: 2000, cache_read_input_tokens: 50, cache_creation_input_tokens: 7, output_tokens: 15 }],
    });
    const scripts = [several, withInput];
    let n = 0;
    const g = await gateway(() => ({ headers: SSE_HEADERS, chunks: scripts[n++]! }));
    const client = anthropic(g);
    for (let i = 0; i < 2; i++)
      await client.messages.stream({ model: MODEL, max_tokens: 64, messages: [{ role: "user", content: "hi" }] }).finalMessage();
    expect(g.llm().map((c) => c.usage)).toEqual([
      { input_tokens: 120, output_tokens: 40, cache_read_tokens: 900, cache_write_tokens: 40 },
      { input_tokens: 2000, output_tokens: 15, cache_read_tokens: 50, cache_write_tokens: 7 },
    ]);
  });

  it("a stream split at every byte is read the same (events cut anywhere, CRLF line ends)", async () => {
    const events = anthropicStream({ id: "msg_b1", model: MODEL, text: "bytes", start: START, deltas: [{ output_tokens: 9 }] }).map((e) =>
      e.replaceAll("\n", "\r\n"),
    );
    const bytes = Buffer.from(events.join(""));
    const g = await gateway(() => ({ headers: SSE_HEADERS, chunks: [...bytes].map((b) => Buffer.from([b])) }));
    const got = await raw(
      g.url,
      "/v1/messages",
      { model: MODEL, max_tokens: 8, stream: true, messages: [] },
      { "x-claude-code-session-id": SESSION },
    );
    expect(got.bytes.equals(bytes)).toBe(true);
    expect(g.llm()[0]).toMatchObject({ message_id: "msg_b1", usage: { input_tokens: 120, output_tokens: 9 } });
  });

  it("an interrupted stream (the vendor's connection drops): the client's stream fails, the usage seen until then is recorded with the status", async () => {
    const events = anthropicStream({
      id: "msg_cut",
      model: MODEL,
      text: "partial",
      start: START,
      deltas: [{ output_tokens: 12 }, { output_tokens: 99 }],
    });
    const g = await gateway(() => ({ headers: SSE_HEADERS, chunks: events.slice(0, 5), cut: true }));
    await expect(
      anthropic(g)
        .messages.stream({ model: MODEL, max_tokens: 64, messages: [{ role: "user", content: "hi" }] })
        .finalMessage(),
    ).rejects.toThrow();
    await until(() => g.llm().length === 1);
    const [call] = g.llm();
    expect(call).toMatchObject({ status: 200, message_id: "msg_cut", usage: { input_tokens: 120, output_tokens: 12 } });
    expect(call!.client_closed).toBeUndefined();
  });

  it("a client that aborts mid-stream: the vendor's request is closed, the call is recorded as client_closed with the usage seen so far", async () => {
    let release: () => void = () => {};
    const wait = new Promise<void>((r) => {
      release = r;
    });
    const events = anthropicStream({
      id: "msg_abort",
      model: MODEL,
      text: "long answer",
      start: START,
      deltas: [{ output_tokens: 20 }, { output_tokens: 500 }],
    });
    const g = await gateway(() => ({ headers: SSE_HEADERS, chunks: events.slice(0, 5), later: { wait, chunks: events.slice(5) } }));
    const controller = new AbortController();
    const stream = await anthropic(g).messages.create(
      { model: MODEL, max_tokens: 600, stream: true, messages: [{ role: "user", content: "hi" }] },
      { signal: controller.signal },
    );
    let deltas = 0;
    for await (const e of stream) {
      if (e.type !== "message_delta") continue;
      deltas++;
      controller.abort();
      break;
    }
    expect(deltas).toBe(1);
    // The gateway records when it sees the client go; the test waits for that, then lets the vendor go on.
    await until(() => g.llm().length === 1);
    release();
    await until(() => g.up.connectionsClosed === 1);
    expect(g.llm()).toHaveLength(1);
    expect(g.llm()[0]).toMatchObject({
      client_closed: true,
      status: 200,
      message_id: "msg_abort",
      usage: { input_tokens: 120, output_tokens: 20 },
    });
    expect(g.stats.client_closed).toBe(1);
  });

  it("an upstream error passes through with its status and body; the llm_call carries the status", async () => {
    const err = JSON.stringify({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } });
    const g = await gateway(() => ({ status: 529, headers: { "content-type": "application/json" }, chunks: [err] }));
    const e = await anthropic(g)
      .messages.create({ model: MODEL, max_tokens: 8, messages: [{ role: "user", content: "hi" }] })
      .catch((x: unknown) => x);
    expect(e).toBeInstanceOf(Anthropic.APIError);
    expect((e as InstanceType<typeof Anthropic.APIError>).status).toBe(529);
    expect(String((e as Error).message)).toContain("Overloaded");
    expect(g.llm()[0]).toMatchObject({ status: 529, usage: { input_tokens: 0, output_tokens: 0 }, model: MODEL });
  });

  it("an unreachable vendor: the gateway answers 502 in Anthropic's error shape and records an error frame, not forwarded", async () => {
    const dead = `http://127.0.0.1:${await freePort()}`;
    const g = await gateway(() => ({ chunks: [] }), undefined, dead);
    const e = (await anthropic(g)
      .messages.create({ model: MODEL, max_tokens: 8, messages: [{ role: "user", content: "hi" }] })
      .catch((x: unknown) => x)) as InstanceType<typeof Anthropic.APIError>;
    expect(e.status).toBe(502);
    expect(e.error).toMatchObject({ type: "error", error: { type: "api_error" } });
    expect(e.message).toContain("could not reach");
    expect(payloadsOf(g.r.frames(CLAUDE), "error")).toEqual([
      { path: "gateway", code: "upstream_unreachable", forwarded: false, status: 502, vendor: "anthropic", model: MODEL },
    ]);
    expect(g.llm()).toEqual([]);
    expect(g.stats.last_error?.message).toContain("127.0.0.1");
  });

  it("count_tokens is forwarded and checked, with no llm_call (the vendor does not bill it)", async () => {
    const g = await gateway(() => ({ chunks: [JSON.stringify({ input_tokens: 42 })] }));
    const n = await anthropic(g).messages.countTokens({ model: MODEL, messages: [{ role: "user", content: "hi" }] });
    expect(n.input_tokens).toBe(42);
    expect(g.up.seen[0]!.path).toBe("/v1/messages/count_tokens");
    expect(existsSync(join(g.r.dir, "journal", `${CLAUDE}.jsonl`))).toBe(false);
  });
});

describe("gateway: OpenAI Responses and Chat Completions through the official SDK", () => {
  const USAGE = {
    input_tokens: 300,
    input_tokens_details: { cached_tokens: 100 },
    output_tokens: 50,
    output_tokens_details: { reasoning_tokens: 20 },
    total_tokens: 350,
  };

  it("Responses, streamed and not: usage from response.completed (input without the cached tokens), the response id, one llm_call each", async () => {
    const stream = responsesStream({ id: "resp_1", model: "gpt-5", text: "hi", usage: USAGE });
    const json = JSON.stringify({ id: "resp_2", object: "response", model: "gpt-5", status: "completed", output: [], usage: USAGE });
    let n = 0;
    const g = await gateway(() => (n++ === 0 ? { headers: SSE_HEADERS, chunks: stream } : { chunks: [json] }));
    const client = openai(g);
    const events: string[] = [];
    for await (const e of await client.responses.create({ model: "gpt-5", input: "hi", stream: true })) events.push(e.type);
    expect(events.at(-1)).toBe("response.completed");
    const r = await client.responses.create({ model: "gpt-5", input: "hi" });
    expect(r.id).toBe("resp_2");
    const expected = { input_tokens: 200, output_tokens: 50, cache_read_tokens: 100, reasoning_tokens: 20 };
    expect(g.llm(AGENT)).toMatchObject([
      { vendor: "openai", model: "gpt-5", stream: true, message_id: "resp_1", usage: expected },
      { vendor: "openai", model: "gpt-5", stream: false, message_id: "resp_2", usage: expected },
    ]);
    expect(g.up.seen[0]!.headers.authorization).toBe("Bearer sk-test-openai-not-real");
    // The headers that named the session to the gateway stay with the gateway.
    expect(g.up.seen[0]!.headers["x-oxagen-agent"]).toBeUndefined();
  });

  it("Responses that end incomplete or failed: the terminal event's usage is recorded", async () => {
    const scripts = [
      responsesStream({ id: "resp_inc", model: "gpt-5", text: "cut", usage: { ...USAGE, output_tokens: 7 }, terminal: "incomplete" }),
      responsesStream({ id: "resp_fail", model: "gpt-5", text: "no", usage: { ...USAGE, output_tokens: 3 }, terminal: "failed" }),
    ];
    let n = 0;
    const g = await gateway(() => ({ headers: SSE_HEADERS, chunks: scripts[n++]! }));
    for (let i = 0; i < 2; i++) {
      const got = await raw(
        g.url,
        "/v1/responses",
        { model: "gpt-5", input: "x", stream: true },
        { "x-oxagen-agent": "my-agent", "x-oxagen-session-id": SESSION },
      );
      expect(got.bytes.toString()).toBe(scripts[i]!.join(""));
    }
    expect(g.llm(AGENT).map((c) => [c.message_id, (c.usage as Json).output_tokens])).toEqual([
      ["resp_inc", 7],
      ["resp_fail", 3],
    ]);
  });

  it("Chat Completions streamed without include_usage: the gateway asks for usage, records it, and the client never sees the usage chunk", async () => {
    const usage = { prompt_tokens: 80, completion_tokens: 9, total_tokens: 89, prompt_tokens_details: { cached_tokens: 16 } };
    const g = await gateway((req) => ({
      headers: SSE_HEADERS,
      chunks: chatStream({
        id: "chatcmpl-1",
        model: "gpt-4o",
        text: "hey",
        usage: req.body.stream_options?.include_usage ? usage : undefined,
      }),
    }));
    const chunks: Json[] = [];
    for await (const c of await openai(g).chat.completions.create({
      model: "gpt-4o",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
    }))
      chunks.push(c);
    expect(g.up.seen[0]!.body.stream_options).toEqual({ include_usage: true });
    expect(chunks.map((c) => c.choices.length)).toEqual([1, 1]);
    expect(chunks.every((c) => !c.usage)).toBe(true);
    expect(g.llm(AGENT)[0]).toMatchObject({
      message_id: "chatcmpl-1",
      usage: { input_tokens: 64, output_tokens: 9, cache_read_tokens: 16 },
    });
    // The request recorded is the one the vendor received.
    expect(g.llm(AGENT)[0]!.request).toEqual({ sha256: sha256Hex(g.up.seen[0]!.raw), size: g.up.seen[0]!.raw.length });
  });

  it("Chat Completions with include_usage from the client: its usage chunk reaches it unchanged; non-streamed usage is read from the body", async () => {
    const usage = { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 };
    let n = 0;
    const g = await gateway(() =>
      n++ === 0
        ? { headers: SSE_HEADERS, chunks: chatStream({ id: "chatcmpl-2", model: "gpt-4o", text: "ok", usage }) }
        : { chunks: [JSON.stringify({ id: "chatcmpl-3", object: "chat.completion", model: "gpt-4o", choices: [], usage })] },
    );
    const chunks: Json[] = [];
    const client = openai(g);
    for await (const c of await client.chat.completions.create({
      model: "gpt-4o",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
      stream_options: { include_usage: true },
    }))
      chunks.push(c);
    expect(chunks.at(-1)!.usage).toEqual(usage);
    await client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] });
    expect(g.llm(AGENT).map((c) => [c.message_id, c.usage])).toEqual([
      ["chatcmpl-2", { input_tokens: 10, output_tokens: 2, cache_read_tokens: 0 }],
      ["chatcmpl-3", { input_tokens: 10, output_tokens: 2, cache_read_tokens: 0 }],
    ]);
  });
});

describe("gateway: refusals, in the vendor's error shape, by the hooks' own rules", () => {
  const hi = [{ role: "user" as const, content: "hi" }];

  it("in order: a suspended computer, then a paused run, then a model off the allow-list; each a policy_decision frame, nothing forwarded", async () => {
    const cases: [Partial<Policy>, string, string][] = [
      [{ suspended_hosts: [HOST_ID], paused_runs: [CLAUDE], models: ["gpt-*"] }, "suspended_host", "this computer is suspended"],
      [{ paused_runs: [CLAUDE], models: ["gpt-*"] }, "paused_run", "this run is paused"],
      [{ models: ["claude-haiku-*"] }, "models", `model ${MODEL} is not on the workspace's allow-list`],
    ];
    for (const [policy, rule, reason] of cases) {
      const g = await gateway(() => ({ chunks: [anthropicMessage({ id: "msg_x", model: MODEL, text: "", usage: {} })] }), policy);
      const e = (await anthropic(g)
        .messages.create({ model: MODEL, max_tokens: 8, messages: hi })
        .catch((x: unknown) => x)) as InstanceType<typeof Anthropic.APIError>;
      // A request the vendor will not serve (400), never a credential problem (403 reads as "Failed to authenticate").
      expect(e).toBeInstanceOf(Anthropic.BadRequestError);
      expect(e.error).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
      expect(e.message).toContain(reason);
      expect(g.up.seen).toEqual([]);
      expect(payloadsOf(g.r.frames(CLAUDE), "policy_decision")).toEqual([
        expect.objectContaining({
          path: "gateway",
          subject: "model",
          decision: "deny",
          mode: "enforce",
          rule,
          model: MODEL,
          policy_etag: "etag-test",
        }),
      ]);
      expect(g.llm()).toEqual([]);
    }
  });

  it("OpenAI's shape for a refused Responses call; the allow-list takes globs", async () => {
    const g = await gateway(
      () => ({ headers: SSE_HEADERS, chunks: responsesStream({ id: "resp_ok", model: "gpt-5-mini", text: "", usage: {} }) }),
      {
        models: ["gpt-5-mini", "claude-*"],
      },
    );
    const client = openai(g);
    const e = (await client.responses.create({ model: "gpt-5", input: "x" }).catch((x: unknown) => x)) as InstanceType<
      typeof OpenAI.APIError
    >;
    expect(e.status).toBe(400);
    expect(e.error).toMatchObject({ type: "invalid_request_error", code: "models" });
    expect(e.message).toContain("gpt-5 is not on the workspace's allow-list");
    for await (const _ of await client.responses.create({ model: "gpt-5-mini", input: "x", stream: true })) {
    }
    expect(g.up.seen.map((s) => s.body.model)).toEqual(["gpt-5-mini"]);
  });

  it("observe mode records what it would have refused and forwards the call", async () => {
    const g = await gateway(
      () => ({ chunks: [anthropicMessage({ id: "msg_obs", model: MODEL, text: "ok", usage: { input_tokens: 1, output_tokens: 1 } })] }),
      {
        mode: "observe",
        models: [],
      },
    );
    await anthropic(g).messages.create({ model: MODEL, max_tokens: 8, messages: hi });
    expect(g.kinds(CLAUDE)).toEqual(["policy_decision", "llm_call"]);
    expect(payloadsOf(g.r.frames(CLAUDE), "policy_decision")[0]).toMatchObject({ mode: "observe", decision: "deny", rule: "models" });
  });
});

describe("gateway: what it accepts and where it records", () => {
  it("a Host or Origin that is not this loopback port is refused before anything is read or forwarded (DNS rebinding)", async () => {
    const g = await gateway(() => ({ chunks: ["{}"] }));
    const evil = await raw(g.url, "/v1/messages", { model: MODEL }, { host: "evil.example:80" });
    expect(evil.status).toBe(403);
    const page = await raw(g.url, "/v1/messages", { model: MODEL }, { origin: "http://evil.example" });
    expect(page.status).toBe(403);
    const local = await raw(g.url, "/v1/messages", { model: MODEL }, { origin: `http://localhost:${g.port}` });
    expect(local.status).toBe(200);
    expect(g.up.seen).toHaveLength(1);
  });

  it("with the enrollment's secret set, a call without it (another user's process on this computer) is refused 401 and not recorded; the secret never goes upstream", async () => {
    const secret = "ab".repeat(32);
    const g = await gateway(
      () => ({ chunks: [anthropicMessage({ id: "msg_sec1", model: MODEL, text: "", usage: { input_tokens: 1, output_tokens: 1 } })] }),
      undefined,
      undefined,
      secret,
    );
    const hi = [{ role: "user" as const, content: "hi" }];
    const wrong: Record<string, string>[] = [
      { "x-claude-code-session-id": SESSION },
      { "x-claude-code-session-id": SESSION, "x-oxagen-hook-secret": "cd".repeat(32) },
    ];
    for (const headers of wrong) {
      const e = (await anthropic(g, headers)
        .messages.create({ model: MODEL, max_tokens: 8, messages: hi })
        .catch((x: unknown) => x)) as InstanceType<typeof Anthropic.APIError>;
      expect(e).toBeInstanceOf(Anthropic.AuthenticationError);
      expect(e.message).toContain("this enrollment's harnesses only");
    }
    expect(g.up.seen).toEqual([]);
    expect(existsSync(join(g.r.dir, "journal", `${CLAUDE}.jsonl`))).toBe(false);
    await anthropic(g, { "x-claude-code-session-id": SESSION, "x-oxagen-hook-secret": secret }).messages.create({
      model: MODEL,
      max_tokens: 8,
      messages: hi,
    });
    expect(g.up.seen).toHaveLength(1);
    expect(g.up.seen[0]!.headers["x-oxagen-hook-secret"]).toBeUndefined();
    expect(g.llm()).toHaveLength(1);
  });

  it("a harness that cannot send a header (Stella) carries the secret as the path's first segment /k/<secret>: taken off, checked, never forwarded", async () => {
    const secret = "ab".repeat(32);
    const g = await gateway(
      () => ({ chunks: [anthropicMessage({ id: "msg_key1", model: MODEL, text: "", usage: { input_tokens: 1, output_tokens: 1 } })] }),
      undefined,
      undefined,
      secret,
    );
    const hi = [{ role: "user" as const, content: "hi" }];
    const keyed = (key: string) => new Anthropic({ apiKey: "sk-ant-test", baseURL: `${g.url}/k/${key}`, maxRetries: 0 });
    const e = (await keyed("cd".repeat(32))
      .messages.create({ model: MODEL, max_tokens: 8, messages: hi })
      .catch((x: unknown) => x)) as InstanceType<typeof Anthropic.APIError>;
    expect(e).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(g.up.seen).toEqual([]);
    await keyed(secret).messages.create({ model: MODEL, max_tokens: 8, messages: hi });
    expect(g.up.seen.map((s) => s.path.split("?")[0])).toEqual(["/v1/messages"]);
    expect(JSON.stringify(g.up.seen[0]!.headers)).not.toContain(secret);
    expect(g.llm(HOST_CHAIN)).toHaveLength(1);
  });

  it("an unknown POST is refused in the vendor's shape and recorded as not forwarded; a GET (the model list) is forwarded unmetered", async () => {
    const g = await gateway(() => ({ chunks: [JSON.stringify({ data: [{ id: MODEL }] })] }));
    const e = (await anthropic(g)
      .post("/v1/messages/batches", { body: { requests: [] } })
      .catch((x: unknown) => x)) as InstanceType<typeof Anthropic.APIError>;
    expect(e.status).toBe(404);
    expect(e.error).toMatchObject({ type: "error", error: { type: "not_found_error" } });
    const models = await anthropic(g).models.list();
    expect(models.data[0]!.id).toBe(MODEL);
    expect(g.up.seen.map((s) => `${s.method} ${s.path.split("?")[0]}`)).toEqual(["GET /v1/models"]);
    expect(payloadsOf(g.r.frames(CLAUDE), "error")).toEqual([
      { path: "gateway", code: "unknown_path", forwarded: false, status: 404, vendor: "anthropic" },
    ]);
    expect(g.stats).toMatchObject({ unmetered: 1, answered: 1, carried: 0 });
  });

  it("a call that names no session goes on the computer's own chain; a custom agent cannot claim a built-in harness's name", async () => {
    let n = 0;
    const g = await gateway(() => ({
      chunks: [anthropicMessage({ id: `msg_h${++n}`, model: MODEL, text: "", usage: { input_tokens: 1, output_tokens: 1 } })],
    }));
    await anthropic(g, {}).messages.create({ model: MODEL, max_tokens: 8, messages: [{ role: "user", content: "hi" }] });
    await anthropic(g, { "x-oxagen-agent": "claude-code", "x-oxagen-session-id": SESSION }).messages.create({
      model: MODEL,
      max_tokens: 8,
      messages: [{ role: "user", content: "hi" }],
    });
    expect(g.llm(HOST_CHAIN)).toHaveLength(2);
    expect(existsSync(join(g.r.dir, "journal", `${CLAUDE}.jsonl`))).toBe(false);
  });

  it("credentials in a request or response are removed before hashing; the caller's key is in no frame and no body on disk", async () => {
    const secret = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfGhIjKlMnOpQrStUvWxYz012345-AbCdEfAA";
    const answer = anthropicMessage({
      id: "msg_sec",
      model: MODEL,
      text: `your key is ${secret}`,
      usage: { input_tokens: 1, output_tokens: 1 },
    });
    const g = await gateway(() => ({ chunks: [answer] }));
    await anthropic(g).messages.create({ model: MODEL, max_tokens: 8, messages: [{ role: "user", content: `store ${secret}` }] });
    const [call] = g.llm();
    expect((call!.redactions as unknown[]).length).toBe(2);
    expect(call!.response).toEqual({ sha256: sha256Hex(redact(answer).text), size: Buffer.byteLength(redact(answer).text) });
    const frames = JSON.stringify(g.r.frames(CLAUDE));
    expect(frames).not.toContain(secret);
    expect(frames).not.toContain("sk-ant-api03-test-key-not-real");
    for (const b of call!.bodies as { sha256: string }[])
      expect(readFileSync(join(g.r.dir, "journal", "bodies", b.sha256), "utf8")).not.toContain(secret);
  });

  it("retention: digest_only keeps no body; a response over 1 MiB is not kept and the frame says which one", async () => {
    const big = anthropicMessage({
      id: "msg_big",
      model: MODEL,
      text: "y".repeat(1024 * 1024 + 10),
      usage: { input_tokens: 1, output_tokens: 1 },
    });
    const g = await gateway(() => ({ chunks: [big] }), { retention: { mode: "keep", keep: ["llm_request", "llm_response"] } });
    await anthropic(g).messages.create({ model: MODEL, max_tokens: 8, messages: [{ role: "user", content: "hi" }] });
    expect((g.llm()[0]!.bodies as Json[]).map((b) => [b.role, b.kept, b.why])).toEqual([
      ["llm_request", true, undefined],
      ["llm_response", false, "over_limit"],
    ]);
    const d = await gateway(() => ({ chunks: [anthropicMessage({ id: "msg_d", model: MODEL, text: "", usage: {} })] }), {
      retention: { mode: "digest_only", keep: [] },
    });
    await anthropic(d).messages.create({ model: MODEL, max_tokens: 8, messages: [{ role: "user", content: "hi" }] });
    const bodies = d.llm()[0]!.bodies as Json[];
    expect(bodies.map((b) => b.why)).toEqual(["digest_only", "digest_only"]);
    for (const b of bodies) expect(existsSync(join(d.r.dir, "journal", "bodies", b.sha256))).toBe(false);
  });
});

const FIX = join(import.meta.dirname, "../fixtures/transcripts");
/** msg_A's usage in claude-session.jsonl before its output (245 tokens). */
const MSG_A_START = { input_tokens: 3, cache_creation_input_tokens: 713, cache_read_input_tokens: 50973, output_tokens: 1 };

describe("gateway: one record per model call beside the transcript and rollout readers", () => {
  it("Claude Code: the transcript's response the gateway carried is not recorded again; the others are", async () => {
    // The vendor's response the transcript shows as msg_A: the same id, model and usage.
    const g = await gateway(() => ({
      headers: SSE_HEADERS,
      chunks: anthropicStream({ id: "msg_A", model: "claude-opus-4-6", text: "x", start: MSG_A_START, deltas: [{ output_tokens: 245 }] }),
    }));
    const dir = mkdtempSync(join(tmpdir(), "cc-gw-"));
    const transcript = join(dir, `${SESSION}.jsonl`);
    copyFileSync(join(FIX, "claude-session.jsonl"), transcript);
    const base = { session_id: SESSION, transcript_path: transcript, cwd: dir };
    g.r.event("claude-code", { ...base, hook_event_name: "SessionStart", source: "startup" });
    await anthropic(g)
      .messages.stream({ model: MODEL, max_tokens: 8, messages: [{ role: "user", content: "hi" }] })
      .finalMessage();
    g.r.event("claude-code", { ...base, hook_event_name: "Stop", last_assistant_message: "done" });
    g.r.event("claude-code", { ...base, hook_event_name: "SessionEnd", reason: "other" });
    const calls = g.llm();
    expect(calls.map((c) => [c.message_id, c.path]).sort()).toEqual([
      ["msg_A", "gateway"],
      ["msg_B", "transcript"],
      ["msg_C", "transcript"],
      ["msg_S1", "transcript"],
      ["msg_S2", "transcript"],
    ]);
    expect(verifyChain(CLAUDE, g.r.frames(CLAUDE)).problems).toEqual([]);
  });

  it("the transcript reader skips a carried call whose frame is not durable yet: the gateway's id is taken when the response ends", () => {
    const r = rig();
    const dir = mkdtempSync(join(tmpdir(), "cc-gw-"));
    const transcript = join(dir, `${SESSION}.jsonl`);
    copyFileSync(join(FIX, "claude-session.jsonl"), transcript);
    const base = { session_id: SESSION, transcript_path: transcript, cwd: dir };
    r.event("claude-code", { ...base, hook_event_name: "SessionStart", source: "startup" });
    const usage = claudeUsage({ ...MSG_A_START, output_tokens: 245 });
    const seen = { id: "msg_A", model: "claude-opus-4-6", usage };
    const carried = { vendor: "anthropic", model: MODEL, stream: true, status: 200, latencyMs: 3, ttfbMs: 1, clientClosed: false };
    const step = llmCallStep({ ...carried, request: Buffer.from("{}"), response: Buffer.from("event: x\n\n"), seen }, null);
    const identity = { vendor: "anthropic", messageId: "msg_A", model: "claude-opus-4-6", usage };
    const has = (id: string) => r.recorder.journal.has(id);
    r.recorder.recordGateway({ harness: "claude-code", agent: null, sessionId: SESSION }, [step], r.clock.now, (chain) =>
      nextCarriedId(has, callKey(chain, identity)),
    );
    // Its group commit has not run (this test never yields): the Stop hook's reader sees only the id.
    expect(r.recorder.journal.chains.get(CLAUDE)!.deferred).toHaveLength(1);
    r.event("claude-code", { ...base, hook_event_name: "Stop", last_assistant_message: "done" });
    r.event("claude-code", { ...base, hook_event_name: "SessionEnd", reason: "other" });
    expect(
      payloadsOf(r.frames(CLAUDE), "llm_call")
        .map((c) => [c.message_id, c.path])
        .sort(),
    ).toEqual([
      ["msg_A", "gateway"],
      ["msg_B", "transcript"],
      ["msg_C", "transcript"],
      ["msg_S1", "transcript"],
      ["msg_S2", "transcript"],
    ]);
    expect(verifyChain(CLAUDE, r.frames(CLAUDE)).problems).toEqual([]);
    r.close();
  });

  it("Codex: the rollout's response id (token_usage_record) names the call the gateway carried; only the other is read from the rollout", async () => {
    const sid = "01a22e25-cee7-78a2-a314-a909cfe9f130";
    const g = await gateway(() => ({
      headers: SSE_HEADERS,
      chunks: responsesStream({
        id: "resp_vendor_8",
        model: "gpt-5-codex",
        text: "x",
        usage: {
          input_tokens: 3800,
          input_tokens_details: { cached_tokens: 1080 },
          output_tokens: 96,
          output_tokens_details: { reasoning_tokens: 13 },
        },
      }),
    }));
    const dir = mkdtempSync(join(tmpdir(), "cx-gw-"));
    const name = readdirSync(join(FIX, "codex-0.169-denied")).find((f) => f.startsWith("rollout-"))!;
    const rollout = join(dir, name);
    copyFileSync(join(FIX, "codex-0.169-denied", name), rollout);
    const base = { session_id: sid, transcript_path: rollout, cwd: dir, model: "gpt-5" };
    g.r.event("codex", { ...base, hook_event_name: "SessionStart", source: "startup" });
    const headers = {
      "session-id": sid,
      "x-codex-turn-metadata": JSON.stringify({ session_id: sid, turn_id: "t1" }),
      originator: "codex_exec",
    };
    for await (const _ of await openai(g, headers).responses.create({ model: "gpt-5", input: "x", stream: true })) {
    }
    g.r.event("codex", { ...base, hook_event_name: "SessionEnd", reason: "exit" });
    const chain = runIdFor(HOST_ID, "codex", sid);
    expect(g.llm(chain).map((c) => [c.message_id, c.path])).toEqual([
      ["resp_vendor_8", "gateway"],
      ["resp_vendor_9", "transcript"],
    ]);
  });
});

/** Waits for a condition the gateway reaches on its own: polls it, asserting the condition, never a duration. */
async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 3000 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(check()).toBe(true);
}

describe("gateway: budget reservations", () => {
  const BUDGETS = [{ id: "daily", scope: "workspace" as const, window: "day" as const, limit_microusd: 1_000_000 }];
  const EXHAUSTED = [
    {
      budget: "daily",
      scope: "workspace" as const,
      window: "day" as const,
      until_ms: Date.now() + 86_400_000,
      spent_microusd: 1_000_000,
      limit_microusd: 1_000_000,
    },
  ];
  /** A lease server that answers every request with `reply` (the real one is tested in test/workers/budgets.test.ts and e2e). */
  const server = (reply: LeaseReply) => {
    const asked: string[] = [];
    const answer = async (what: string) => {
      asked.push(what);
      return reply;
    };
    return { asked, leases: new BudgetLeases({ open: (run, m) => answer(`open ${run} ${m}`), resize: (_id, m) => answer(`resize ${m}`) }) };
  };
  const stream = () => ({ headers: SSE_HEADERS, chunks: responsesStream({ id: "resp_b", model: "gpt-5", text: "hi", usage: USAGE }) });
  const USAGE = { input_tokens: 10, output_tokens: 5, total_tokens: 15 };

  it("refuses a call the lease has no room for as OpenAI refuses a spend limit (429 insufficient_quota), never reaching the vendor, with a policy_decision of rule budget", async () => {
    const s = server({
      granted: false,
      exhausted: { budget: "daily", spent_microusd: 1_000_001, reserved_microusd: 1, limit_microusd: 1_000_000 },
      room_microusd: 0,
    });
    const g = await gateway(stream, { budgets: BUDGETS }, undefined, null, s.leases);
    const err = await openai(g)
      .responses.create({ model: "gpt-5", input: "hi", stream: true, max_output_tokens: 100 })
      .catch((e: unknown) => e as InstanceType<typeof OpenAI.APIError>);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(429);
    expect((err as InstanceType<typeof OpenAI.APIError>).error).toMatchObject({
      type: "insufficient_quota",
      code: "insufficient_quota",
      message: expect.stringMatching(
        /^Oxagen refused this model call: the budget daily \(\$1\.0000\) has no room left for this call \(\$\d+\.\d{4} is spent, \$0\.0000 is reserved by calls in flight, \$0\.0000 is left\): this call may cost up to \$0\.\d{4}$/,
      ),
    });
    expect(g.up.seen).toHaveLength(0);
    // One lease asked for; the refusal says no room is left, so nothing is asked again.
    expect(s.asked).toEqual([expect.stringMatching(new RegExp(`^open ${AGENT} \\d+$`))]);
    expect(payloadsOf(g.r.frames(AGENT), "policy_decision")).toEqual([
      expect.objectContaining({ path: "gateway", subject: "model", decision: "deny", rule: "budget", model: "gpt-5" }),
    ]);
  });

  it("reserves a call tied to no session like any other, on the computer's own chain (where it is recorded and priced)", async () => {
    const s = server({
      granted: true,
      lease_id: `lease_${"1".repeat(32)}`,
      microusd: 1_000_000,
      expires_ms: Date.now() + 600_000,
      room_microusd: 10_000_000,
    });
    const g = await gateway(stream, { budgets: BUDGETS }, undefined, null, s.leases);
    for await (const _ of await openai(g, {}).responses.create({ model: "gpt-5", input: "hi", stream: true, max_output_tokens: 100 })) {
    }
    expect(s.asked).toEqual([expect.stringMatching(new RegExp(`^open ${HOST_CHAIN} \\d+$`))]);
    expect(g.llm(HOST_CHAIN)).toHaveLength(1);
  });

  it("fails open when the server cannot be asked: forwarded unreserved, unless the policy already lists the budget exhausted; a reserved call is not refused by that list", async () => {
    const down = server({ granted: false, unreachable: "connect ECONNREFUSED" });
    const g = await gateway(stream, { budgets: BUDGETS }, undefined, null, down.leases);
    const ok = await openai(g).responses.create({ model: "gpt-5", input: "hi", stream: true });
    for await (const _ of ok) {
    }
    expect(g.up.seen).toHaveLength(1);
    expect(down.asked).toHaveLength(1);
    g.r.recorder.policy = { policy: { ...g.r.recorder.policy!.policy, exhausted_budgets: EXHAUSTED }, etag: "etag-2" };
    const err = await openai(g)
      .responses.create({ model: "gpt-5", input: "hi", stream: true })
      .catch((e: unknown) => e as InstanceType<typeof OpenAI.APIError>);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(429);
    expect(g.up.seen).toHaveLength(1);

    // With a lease granted, the pushed exhaustion (a lease reaching the limit sets it too) does not refuse the reserved call.
    const up = server({ granted: true, lease_id: `lease_${"1".repeat(32)}`, microusd: 1_000_000, expires_ms: Date.now() + 600_000 });
    const h = await gateway(stream, { budgets: BUDGETS, exhausted_budgets: EXHAUSTED }, undefined, null, up.leases);
    const reserved = await openai(h).responses.create({ model: "gpt-5", input: "hi", stream: true });
    for await (const _ of reserved) {
    }
    expect(h.up.seen).toHaveLength(1);
    expect(up.leases.slice(AGENT)).toMatchObject({ reserved: 0 });
  });

  it("a call whose forwarding throws after its lease came is answered 502 and gives its reservation back (no unhandled rejection)", async () => {
    const leases = new BudgetLeases({
      open: async () => ({ granted: true, lease_id: `lease_${"3".repeat(32)}`, microusd: 1_000_000, expires_ms: Date.now() + 600_000 }),
      resize: async () => ({ granted: false, gone: true }),
    });
    const r = rig();
    r.recorder.policy = { policy: { ...defaultPolicy("ws_test", 1), budgets: BUDGETS }, etag: "etag-test" };
    const up = await startUpstream(stream);
    const port = await freePort();
    const sink = {
      ...recorderSink(r.recorder, () => null, leases),
      upstream: () => new URL(up.url),
      decide: (): never => {
        throw new Error("boom");
      },
    };
    const listening = await listenLoopback(port, gatewayHandler(port, sink, emptyStats()));
    try {
      const res = await raw(
        `http://127.0.0.1:${port}`,
        "/v1/responses",
        { model: "gpt-5", input: "hi", stream: true },
        {
          "x-oxagen-agent": "my-agent",
          "x-oxagen-session-id": SESSION,
        },
      );
      expect(res.status).toBe(502);
      expect(up.seen).toHaveLength(0);
      expect(leases.slice(AGENT)).toMatchObject({ reserved: 0 });
    } finally {
      await listening.close();
      await up.close();
      r.close();
    }
  });

  it("a client that leaves while its call waits for the lease: not forwarded, the reservation given back, recorded as not forwarded (client_closed)", async () => {
    let grant: (r: LeaseReply) => void = () => {};
    const asked: string[] = [];
    const leases = new BudgetLeases({
      open: (run) => {
        asked.push(run);
        return new Promise<LeaseReply>((resolve) => {
          grant = resolve;
        });
      },
      resize: async () => ({ granted: false, gone: true }),
    });
    const r = rig();
    r.recorder.policy = { policy: { ...defaultPolicy("ws_test", 1), budgets: BUDGETS }, etag: "etag-test" };
    const up = await startUpstream(stream);
    const port = await freePort();
    const sink = { ...recorderSink(r.recorder, () => null, leases), upstream: () => new URL(up.url) };
    const handler = gatewayHandler(port, sink, emptyStats());
    let closed = 0;
    const listening = await listenLoopback(port, (req, res) => {
      res.on("close", () => closed++);
      handler(req, res);
    });
    try {
      const body = JSON.stringify({ model: "gpt-5", input: "hi", stream: true });
      const req = request(`http://127.0.0.1:${port}/v1/responses`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: "Bearer sk-test",
          "x-oxagen-agent": "my-agent",
          "x-oxagen-session-id": SESSION,
        },
      });
      req.on("error", () => {});
      req.end(body);
      await until(() => asked.length === 1);
      req.destroy();
      await until(() => closed === 1);
      grant({ granted: true, lease_id: `lease_${"2".repeat(32)}`, microusd: 1_000_000, expires_ms: Date.now() + 600_000 });
      const errors = () => (existsSync(join(r.dir, "journal", `${AGENT}.jsonl`)) ? payloadsOf(r.frames(AGENT), "error") : []);
      // Either outcome ends the wait: the call forwarded (the bug) or its not-forwarded frame recorded.
      await until(() => up.seen.length > 0 || errors().length > 0);
      expect(up.seen).toHaveLength(0);
      expect(leases.slice(AGENT)).toMatchObject({ reserved: 0 });
      expect(errors()).toEqual([
        expect.objectContaining({ path: "gateway", code: "client_closed", forwarded: false, vendor: "openai", model: "gpt-5" }),
      ]);
      expect(payloadsOf(r.frames(AGENT), "llm_call")).toEqual([]);
    } finally {
      await listening.close();
      await up.close();
      r.close();
    }
  });
});
