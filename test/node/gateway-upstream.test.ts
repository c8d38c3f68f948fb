// The gateway against vendors that misbehave at the connection level: a kept-alive connection the
// vendor closed (retried once, fresh), one that breaks after it began to answer (never retried),
// and a vendor that goes silent (answered and recorded as the vendor's own timeout).
import { createServer, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { anthropic, closeGateways, gateway, type GatewayRig, MODEL } from "../support/gateway-rig.ts";
import { anthropicStream, listenLocal } from "../support/upstream.ts";

afterEach(closeGateways);

interface RawUpstream {
  url: string;
  /** Requests received, in order, with the number of the connection each came on (from 1). */
  requests: { connection: number; index: number }[];
  close(): Promise<void>;
}

/**
 * A vendor on raw TCP: for the n-th request of a connection (from 1), `answer` writes what it
 * likes to the socket (HTTP/1.1, kept alive) or destroys it.
 */
async function rawUpstream(answer: (socket: Socket, nth: number) => void): Promise<RawUpstream> {
  const sockets = new Set<Socket>();
  let connections = 0;
  const up: RawUpstream = { url: "", requests: [], close: async () => {} };
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    const connection = ++connections;
    let nth = 0;
    let buf = Buffer.alloc(0);
    socket.on("data", (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      for (;;) {
        const end = buf.indexOf("\r\n\r\n");
        if (end < 0) return;
        const length = Number(/content-length: (\d+)/i.exec(buf.subarray(0, end).toString())?.[1] ?? 0);
        if (buf.length < end + 4 + length) return;
        buf = buf.subarray(end + 4 + length);
        up.requests.push({ connection, index: ++nth });
        answer(socket, nth);
      }
    });
    socket.on("error", () => {});
  });
  Object.assign(up, await listenLocal(server, sockets));
  return up;
}

const stream = (id: string) =>
  anthropicStream({ id, model: MODEL, text: "x", start: { input_tokens: 10, output_tokens: 1 }, deltas: [{ output_tokens: 4 }] }).join("");
const head = (body: string) =>
  `HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: keep-alive\r\n\r\n`;
const call = (g: GatewayRig) =>
  anthropic(g)
    .messages.stream({ model: MODEL, max_tokens: 8, messages: [{ role: "user", content: "hi" }] })
    .finalMessage();

describe("gateway: the vendor's connection", () => {
  it("a kept-alive connection the vendor closed before taking the request: sent again once on a fresh connection, answered, recorded once", async () => {
    // The second request of each connection finds it closed (as a vendor closes an idle one at its keep-alive limit).
    const up = await rawUpstream((socket, nth) => {
      if (nth === 1) socket.write(head(stream(`msg_k${up.requests.length}`)) + stream(`msg_k${up.requests.length}`));
      else socket.destroy();
    });
    const g = await gateway(() => ({ chunks: [] }), undefined, up.url);
    await call(g);
    const second = await call(g);
    expect(second.id).toBe("msg_k3");
    // Connection 1 took the first call, and was closed under the second; connection 2 took it again.
    expect(up.requests).toEqual([
      { connection: 1, index: 1 },
      { connection: 1, index: 2 },
      { connection: 2, index: 1 },
    ]);
    expect(g.stats.retried).toBe(1);
    await g.r.recorder.journal.settled();
    expect(g.llm().map((c) => c.message_id)).toEqual(["msg_k1", "msg_k3"]);
    await up.close();
  });

  it("a vendor that breaks off after it began to answer, on a reused connection: never sent again; the client sees the break, the call is recorded", async () => {
    const up = await rawUpstream((socket, nth) => {
      const body = stream(`msg_b${nth}`);
      if (nth === 1) socket.write(head(body) + body);
      // Headers and half the stream, then the connection drops.
      else socket.write(head(body) + body.slice(0, body.length / 2), () => socket.destroy());
    });
    const g = await gateway(() => ({ chunks: [] }), undefined, up.url);
    await call(g);
    await expect(call(g)).rejects.toThrow();
    expect(up.requests).toEqual([
      { connection: 1, index: 1 },
      { connection: 1, index: 2 },
    ]);
    expect(g.stats.retried).toBe(0);
    await g.r.recorder.journal.settled();
    expect(g.llm().map((c) => [c.message_id, c.status])).toEqual([
      ["msg_b1", 200],
      ["msg_b2", 200],
    ]);
    await up.close();
  });

  it("a vendor that never answers: after the first-byte timeout the client gets Anthropic's 504 timeout_error; the call is recorded as forwarded and timed out", async () => {
    const up = await rawUpstream(() => {});
    const g = await gateway(() => ({ chunks: [] }), undefined, up.url, null, undefined, {
      connectMs: 10_000,
      firstByteMs: 200,
      idleMs: 10_000,
    });
    const err = (await call(g).catch((e: unknown) => e)) as { status?: number; error?: { error?: { type?: string } } };
    expect(err.status).toBe(504);
    expect(err.error?.error?.type).toBe("timeout_error");
    await g.r.recorder.journal.settled();
    expect(g.llm().map((c) => [c.status, c.timed_out, c.forwarded])).toEqual([[504, "first_byte", true]]);
    await up.close();
  });

  it("a vendor that goes silent mid-stream: after the idle timeout the stream ends with the vendor's own error event; the usage so far is recorded", async () => {
    const up = await rawUpstream((socket) => {
      const body = stream("msg_idle");
      // Chunked, so the stream can stop without ending: message_start only, then nothing.
      const start = body.slice(0, body.indexOf("event: content_block_start"));
      socket.write(
        `HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n${Buffer.byteLength(start).toString(16)}\r\n${start}\r\n`,
      );
    });
    const g = await gateway(() => ({ chunks: [] }), undefined, up.url, null, undefined, {
      connectMs: 10_000,
      firstByteMs: 10_000,
      idleMs: 200,
    });
    const err = (await call(g).catch((e: unknown) => e)) as Error;
    expect(String(err)).toMatch(/timeout_error|sent nothing/);
    await g.r.recorder.journal.settled();
    expect(g.llm().map((c) => [c.message_id, c.status, c.timed_out, (c.usage as { input_tokens: number }).input_tokens])).toEqual([
      ["msg_idle", 200, "idle", 10],
    ]);
    await up.close();
  });
});
