/** One server-sent event: its bytes as they arrived (terminator included), its `event` name and `data` text. */
export interface SseEvent {
  readonly raw: Buffer;
  readonly event: string | null;
  readonly data: string;
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * Splits a byte stream into server-sent events as it arrives, never holding more than the event
 * still open. Events end at a blank line (LF LF, or CR LF CR LF); each keeps its exact bytes, so a
 * caller that passes `raw` on changes nothing.
 */
export class SseSplitter {
  #pending: Buffer = Buffer.alloc(0);
  #from = 0;

  push(chunk: Buffer): SseEvent[] {
    this.#pending = this.#pending.length ? Buffer.concat([this.#pending, chunk]) : chunk;
    const out: SseEvent[] = [];
    let start = 0;
    const buf = this.#pending;
    // indexOf finds each LF natively (a byte-by-byte loop here was most of the splitter's time).
    for (let i = buf.indexOf(LF, Math.max(this.#from, 1)); i >= 0; i = buf.indexOf(LF, i + 1)) {
      // A blank line: LF LF, or CR LF CR LF (then buf[i-1] is CR and buf[i-2] is LF).
      const blank = buf[i - 1] === LF || (buf[i - 1] === CR && i >= 2 && buf[i - 2] === LF);
      if (!blank || i < start + 1) continue;
      out.push(new LazyEvent(buf.subarray(start, i + 1)));
      start = i + 1;
    }
    this.#pending = start === 0 ? buf : buf.subarray(start);
    this.#from = this.#pending.length;
    return out;
  }

  /** Bytes of an event not yet ended (a stream cut mid-event). */
  rest(): Buffer {
    return this.#pending;
  }
}

const EVENT = Buffer.from("event:");
const NEXT_EVENT = Buffer.from("\nevent:");

/**
 * An event read only as far as asked: a meter that needs only the name (most of a stream's
 * events) costs two native searches and a few bytes decoded, not the whole event decoded and split.
 */
class LazyEvent implements SseEvent {
  readonly raw: Buffer;
  #event: string | null | undefined;
  #data: string | undefined;

  constructor(raw: Buffer) {
    this.raw = raw;
  }

  get event(): string | null {
    if (this.#event !== undefined) return this.#event;
    const raw = this.raw;
    const nl = raw.indexOf(LF);
    // The usual shape, an `event:` line first and no other: its name is that line's rest.
    if (nl > 0 && raw.subarray(0, EVENT.length).equals(EVENT) && raw.indexOf(NEXT_EVENT, nl) < 0) {
      const from = raw[EVENT.length] === 0x20 ? EVENT.length + 1 : EVENT.length;
      const to = raw[nl - 1] === CR ? nl - 1 : nl;
      this.#event = raw.toString("utf8", Math.min(from, to), to);
    } else this.#parse();
    return this.#event ?? null;
  }

  get data(): string {
    if (this.#data === undefined) this.#parse();
    return this.#data as string;
  }

  #parse(): void {
    let event: string | null = null;
    const data: string[] = [];
    for (const line of this.raw.toString("utf8").split(/\r?\n/)) {
      if (line.startsWith("data:")) data.push(line.slice(line[5] === " " ? 6 : 5));
      else if (line.startsWith("event:")) event = line.slice(line[6] === " " ? 7 : 6);
    }
    this.#event = event;
    this.#data = data.join("\n");
  }
}
