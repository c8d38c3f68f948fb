// A scripted model vendor on a loopback port: Anthropic's Messages API (SSE, as Claude Code calls
// it) and OpenAI's Responses API (SSE, as Codex calls it). Each request gets the next reply the
// test's script gives for it: text, or one tool call, with usage.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";

// biome-ignore lint/suspicious/noExplicitAny: request bodies are whatever the harness sends
type Json = Record<string, any>;

/** What the model "says" for one request. */
export type Reply =
  | { text: string }
  | {
      /** `namespace`: the Responses API's namespace of the function (Codex offers an MCP server's tools as `mcp__<server>`). */
      tool: { name: string; input: Record<string, unknown>; namespace?: string };
      text?: string;
    };

/** One request as the vendor saw it. */
export interface Seen {
  api: "anthropic" | "openai";
  path: string;
  headers: IncomingMessage["headers"];
  body: Json;
}

export interface Vendor {
  url: string;
  seen: Seen[];
  close(): Promise<void>;
}

const USAGE = { input: 120, output: 30 };

function sse(res: ServerResponse, events: [string, Json][]): void {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  for (const [event, data] of events) res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  res.end();
}

function anthropic(res: ServerResponse, body: Json, reply: Reply, n: number): void {
  const id = `msg_${n}`;
  const usage = { input_tokens: USAGE.input, output_tokens: USAGE.output, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  const blocks: Json[] = [];
  if ("text" in reply && reply.text) blocks.push({ type: "text", text: reply.text });
  if ("tool" in reply) blocks.push({ type: "tool_use", id: `toolu_${n}`, name: reply.tool.name, input: reply.tool.input });
  const stop = "tool" in reply ? "tool_use" : "end_turn";
  if (!body.stream) {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        id,
        type: "message",
        role: "assistant",
        model: body.model,
        content: blocks,
        stop_reason: stop,
        stop_sequence: null,
        usage,
      }),
    );
    return;
  }
  const events: [string, Json][] = [
    [
      "message_start",
      {
        type: "message_start",
        message: {
          id,
          type: "message",
          role: "assistant",
          model: body.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { ...usage, output_tokens: 1 },
        },
      },
    ],
  ];
  blocks.forEach((b, index) => {
    if (b.type === "text") {
      events.push(["content_block_start", { type: "content_block_start", index, content_block: { type: "text", text: "" } }]);
      events.push(["content_block_delta", { type: "content_block_delta", index, delta: { type: "text_delta", text: b.text } }]);
    } else {
      events.push([
        "content_block_start",
        { type: "content_block_start", index, content_block: { type: "tool_use", id: b.id, name: b.name, input: {} } },
      ]);
      events.push([
        "content_block_delta",
        { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: JSON.stringify(b.input) } },
      ]);
    }
    events.push(["content_block_stop", { type: "content_block_stop", index }]);
  });
  events.push([
    "message_delta",
    { type: "message_delta", delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: USAGE.output } },
  ]);
  events.push(["message_stop", { type: "message_stop" }]);
  sse(res, events);
}

function openai(res: ServerResponse, body: Json, reply: Reply, n: number): void {
  const id = `resp_${n}`;
  const created = Math.floor(Date.now() / 1000);
  const items: Json[] = [];
  if ("text" in reply && reply.text)
    items.push({
      type: "message",
      id: `msg_${n}`,
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: reply.text, annotations: [] }],
    });
  if ("tool" in reply)
    items.push({
      type: "function_call",
      id: `fc_${n}`,
      call_id: `call_${n}`,
      name: reply.tool.name,
      ...(reply.tool.namespace ? { namespace: reply.tool.namespace } : {}),
      arguments: JSON.stringify(reply.tool.input),
      status: "completed",
    });
  const usage = {
    input_tokens: USAGE.input,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: USAGE.output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: USAGE.input + USAGE.output,
  };
  const base = { id, object: "response", created_at: created, model: body.model };
  const events: [string, Json][] = [
    ["response.created", { type: "response.created", response: { ...base, status: "in_progress", output: [] } }],
  ];
  items.forEach((item, output_index) => {
    events.push([
      "response.output_item.added",
      { type: "response.output_item.added", output_index, item: { ...item, status: "in_progress" } },
    ]);
    events.push(["response.output_item.done", { type: "response.output_item.done", output_index, item }]);
  });
  events.push(["response.completed", { type: "response.completed", response: { ...base, status: "completed", output: items, usage } }]);
  sse(res, events);
}

/** Starts the vendor; `script` decides each reply (it sees the request and everything seen before). */
export async function startVendor(script: (req: Seen, seen: Seen[]) => Reply): Promise<Vendor> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = (req.url ?? "").split("?")[0]!;
      let body: Json = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as Json;
      } catch {}
      const api = path.endsWith("/messages") ? "anthropic" : path.endsWith("/responses") ? "openai" : null;
      if (req.method !== "POST" || !api) {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ type: "error", error: { type: "not_found_error", message: `no ${req.method} ${path} here` } }));
        return;
      }
      const one: Seen = { api, path, headers: req.headers, body };
      seen.push(one);
      const reply = script(one, seen);
      if (api === "anthropic") anthropic(res, body, reply, seen.length);
      else openai(res, body, reply, seen.length);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    seen,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

/** The text of the last user turn in a request (Anthropic or OpenAI shape): what the script reacts to. */
export function lastUserText(req: Seen): string {
  const messages: Json[] = req.api === "anthropic" ? (req.body.messages ?? []) : (req.body.input ?? []);
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== "user") continue;
    const content = m.content;
    if (typeof content === "string") return content;
    if (Array.isArray(content)) return content.map((c: Json) => (typeof c.text === "string" ? c.text : "")).join("\n");
  }
  return "";
}

/** How many tool results the request carries already (the conversation's progress). */
export function toolResults(req: Seen): number {
  if (req.api === "anthropic")
    return (req.body.messages ?? [])
      .flatMap((m: Json) => (Array.isArray(m.content) ? m.content : []))
      .filter((c: Json) => c.type === "tool_result").length;
  return (req.body.input ?? []).filter((i: Json) => i.type === "function_call_output").length;
}
