// A scripted model vendor for the gateway's tests: each request gets the raw response the test's
// script gives (status, headers, body chunks), so a test controls every byte, including a stream
// that breaks off or waits for the test.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Server as NetServer, Socket } from "node:net";

// biome-ignore lint/suspicious/noExplicitAny: request bodies are whatever the client sends
export type Json = Record<string, any>;

export interface UpstreamRequest {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
  raw: Buffer;
  body: Json;
}

export interface Scripted {
  status?: number;
  headers?: Record<string, string>;
  chunks: (string | Buffer)[];
  /** Destroy the connection after the chunks instead of ending the response. */
  cut?: boolean;
  /** Written after `chunks`, once this settles (a stream the test holds open). */
  later?: { wait: Promise<void>; chunks: (string | Buffer)[] };
}

export interface Upstream {
  url: string;
  seen: UpstreamRequest[];
  /** Connections the client closed (the upstream never closes one itself before `close`). */
  connectionsClosed: number;
  /** Every byte the upstream sent for each request, in order. */
  sent: Buffer[];
  close(): Promise<void>;
}

export async function startUpstream(script: (req: UpstreamRequest) => Scripted): Promise<Upstream> {
  const sockets = new Set<Socket>();
  const up: Upstream = { url: "", seen: [], connectionsClosed: 0, sent: [], close: async () => {} };
  const server = createServer((req, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const raw = Buffer.concat(chunks);
      let body: Json = {};
      try {
        body = JSON.parse(raw.toString("utf8") || "{}") as Json;
      } catch {}
      const r: UpstreamRequest = { method: req.method ?? "", path: req.url ?? "", headers: req.headers, raw, body };
      up.seen.push(r);
      const s = script(r);
      const sent: Buffer[] = [];
      up.sent.push(Buffer.alloc(0));
      const index = up.sent.length - 1;
      const write = (c: string | Buffer) => {
        const b = Buffer.from(c);
        sent.push(b);
        up.sent[index] = Buffer.concat(sent);
        res.write(b);
      };
      res.writeHead(s.status ?? 200, s.headers ?? { "content-type": "application/json" });
      for (const c of s.chunks) write(c);
      if (s.later) {
        await s.later.wait;
        if (res.destroyed) return;
        for (const c of s.later.chunks) write(c);
      }
      // A cut comes once every byte before it went out: the client sees the stream break, not the request fail.
      if (s.cut) res.write("", () => res.socket?.destroy());
      else res.end();
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    // A keep-alive connection closes only when its client closes it (the gateway, when its own client left).
    s.on("close", () => {
      sockets.delete(s);
      up.connectionsClosed++;
    });
  });
  Object.assign(up, await listenLocal(server, sockets));
  return up;
}

/** Listens on a free loopback port: its URL, and a close that drops every open connection first. */
export async function listenLocal(server: NetServer, sockets: Set<Socket>): Promise<{ url: string; close(): Promise<void> }> {
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    close: () =>
      new Promise((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

/** One server-sent event's bytes. */
export function sse(event: string | null, data: unknown): string {
  return `${event ? `event: ${event}\n` : ""}data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`;
}

export const SSE_HEADERS = { "content-type": "text/event-stream", "cache-control": "no-cache" };

/** An Anthropic Messages stream: message_start with `start` usage, one text block, then a message_delta per `deltas` entry. */
export function anthropicStream(o: { id: string; model: string; text: string; start: Json; deltas: Json[] }): string[] {
  const events = [
    sse("message_start", {
      type: "message_start",
      message: {
        id: o.id,
        type: "message",
        role: "assistant",
        model: o.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: o.start,
      },
    }),
    sse("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
    sse("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: o.text } }),
    sse("content_block_stop", { type: "content_block_stop", index: 0 }),
  ];
  o.deltas.forEach((usage, i) => {
    const last = i === o.deltas.length - 1;
    events.push(
      sse("message_delta", {
        type: "message_delta",
        delta: { stop_reason: last ? "end_turn" : null, stop_sequence: null },
        usage,
      }),
    );
  });
  events.push(sse("message_stop", { type: "message_stop" }));
  return events;
}

/** An Anthropic Messages JSON response. */
export function anthropicMessage(o: { id: string; model: string; text: string; usage: Json }): string {
  return JSON.stringify({
    id: o.id,
    type: "message",
    role: "assistant",
    model: o.model,
    content: [{ type: "text", text: o.text }],
    stop_reason: "end_turn",
    stop_sequence: null,
    usage: o.usage,
  });
}

/** An OpenAI Responses stream ending in `terminal` (completed, incomplete or failed) with `usage`. */
export function responsesStream(o: { id: string; model: string; text: string; usage: Json; terminal?: string }): string[] {
  const terminal = o.terminal ?? "completed";
  const base = { id: o.id, object: "response", created_at: 1, model: o.model };
  const item = {
    type: "message",
    id: `msg_${o.id}`,
    role: "assistant",
    status: "completed",
    content: [{ type: "output_text", text: o.text, annotations: [] }],
  };
  return [
    sse("response.created", { type: "response.created", sequence_number: 0, response: { ...base, status: "in_progress", output: [] } }),
    sse("response.output_item.added", {
      type: "response.output_item.added",
      sequence_number: 1,
      output_index: 0,
      item: { ...item, status: "in_progress", content: [] },
    }),
    sse("response.output_text.delta", {
      type: "response.output_text.delta",
      sequence_number: 2,
      item_id: item.id,
      output_index: 0,
      content_index: 0,
      delta: o.text,
    }),
    sse("response.output_item.done", { type: "response.output_item.done", sequence_number: 3, output_index: 0, item }),
    sse(`response.${terminal}`, {
      type: `response.${terminal}`,
      sequence_number: 4,
      response: { ...base, status: terminal === "completed" ? "completed" : terminal, output: [item], usage: o.usage },
    }),
  ];
}

/** A Chat Completions stream; with `usage`, the usage chunk (no choices) before `[DONE]`. */
export function chatStream(o: { id: string; model: string; text: string; usage?: Json }): string[] {
  const base = { id: o.id, object: "chat.completion.chunk", created: 1, model: o.model };
  const out = [
    sse(null, { ...base, choices: [{ index: 0, delta: { role: "assistant", content: o.text }, finish_reason: null }], usage: null }),
    sse(null, { ...base, choices: [{ index: 0, delta: {}, finish_reason: "stop" }], usage: null }),
  ];
  if (o.usage) out.push(sse(null, { ...base, choices: [], usage: o.usage }));
  out.push(sse(null, "[DONE]"));
  return out;
}
