// The server's side of a push connection for the stub server: the WebSocket handshake (RFC 6455)
// and text frames, enough for the recorder's own client (Node's WebSocket) to connect, receive
// pushes and send its pings and acknowledgements.
import { createHash } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";

const GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/** One accepted push connection: what the recorder sent (pings answered), and a way to push. */
export class StubPushConnection {
  readonly received: string[] = [];
  readonly #socket: Duplex;
  readonly #waiters: (() => void)[] = [];
  #buffer = Buffer.alloc(0);

  constructor(req: IncomingMessage, socket: Duplex) {
    this.#socket = socket;
    const accept = createHash("sha1").update(`${req.headers["sec-websocket-key"]}${GUID}`).digest("base64");
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
    );
    socket.on("data", (chunk: Buffer) => this.#read(chunk));
    socket.on("error", () => {});
  }

  /** Sends one text message. */
  send(text: string): void {
    const payload = Buffer.from(text);
    const n = payload.length;
    const head = n < 126 ? Buffer.from([0x81, n]) : n < 65536 ? Buffer.from([0x81, 126, n >> 8, n & 0xff]) : null;
    if (!head) {
      const big = Buffer.alloc(10);
      big[0] = 0x81;
      big[1] = 127;
      big.writeBigUInt64BE(BigInt(n), 2);
      this.#socket.write(Buffer.concat([big, payload]));
    } else this.#socket.write(Buffer.concat([head, payload]));
  }

  /** Waits until the recorder sent a message `match` accepts (pings aside); answers it. */
  async next(match: (msg: string) => boolean): Promise<string> {
    for (;;) {
      const found = this.received.find(match);
      if (found) {
        this.received.splice(this.received.indexOf(found), 1);
        return found;
      }
      await new Promise<void>((r) => this.#waiters.push(r));
    }
  }

  close(): void {
    this.#socket.destroy();
  }

  #read(chunk: Buffer): void {
    this.#buffer = Buffer.concat([this.#buffer, chunk]);
    for (;;) {
      const b = this.#buffer;
      if (b.length < 2) return;
      let len = b[1]! & 0x7f;
      let at = 2;
      if (len === 126) {
        if (b.length < 4) return;
        len = b.readUInt16BE(2);
        at = 4;
      } else if (len === 127) {
        if (b.length < 10) return;
        len = Number(b.readBigUInt64BE(2));
        at = 10;
      }
      const masked = (b[1]! & 0x80) !== 0;
      const end = at + (masked ? 4 : 0) + len;
      if (b.length < end) return;
      const mask = masked ? b.subarray(at, at + 4) : null;
      const data = Buffer.from(b.subarray(end - len, end));
      if (mask) for (let i = 0; i < data.length; i++) data[i] = data[i]! ^ mask[i % 4]!;
      this.#buffer = b.subarray(end);
      const opcode = b[0]! & 0x0f;
      if (opcode === 0x8) {
        this.#socket.end();
        return;
      }
      if (opcode !== 0x1) continue;
      const text = data.toString("utf8");
      if (text === "ping") this.send("pong");
      else {
        this.received.push(text);
        for (const w of this.#waiters.splice(0)) w();
      }
    }
  }
}
