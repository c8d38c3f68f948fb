// The SSE splitter's events are read only as far as asked (collector/gateway/model/sse.ts): an
// event's name from its first line when that is its only `event:` line, the whole event otherwise.
// Whatever is asked first, the name and the data are what decoding and splitting the whole event
// gives, and the events' bytes are the stream's own.
import { describe, expect, it } from "vitest";
import { SseSplitter } from "../../collector/gateway/model/sse.ts";
import { seeded } from "../support/random.ts";

/** The event as the splitter read it before: the whole event decoded, split into lines, read. */
function eager(raw: Buffer): { event: string | null; data: string } {
  let event: string | null = null;
  const data: string[] = [];
  for (const line of raw.toString("utf8").split(/\r?\n/)) {
    if (line.startsWith("data:")) data.push(line.slice(line[5] === " " ? 6 : 5));
    else if (line.startsWith("event:")) event = line.slice(line[6] === " " ? 7 : 6);
  }
  return { event, data: data.join("\n") };
}

const LINES = [
  "event: message_start",
  "event:x",
  "event:",
  "event: ",
  "event: a\rb",
  "event: ünï",
  'data: {"a":1}',
  "data:",
  "data: ",
  "data:x",
  ": comment",
  "id: 7",
  "retry: 10",
  "eventx: y",
  " event: z",
];
const ODD = [Buffer.from([0xe2, 0x82]), Buffer.from([0x80]), Buffer.from([0xff, 0xfe]), Buffer.from("\r")];

function randomEvent(r: () => number): Buffer {
  const parts: Buffer[] = [];
  const eol = r() < 0.3 ? "\r\n" : "\n";
  for (let i = 0, n = 1 + Math.floor(r() * 4); i < n; i++) {
    parts.push(Buffer.from(LINES[Math.floor(r() * LINES.length)]!));
    if (r() < 0.2) parts.push(ODD[Math.floor(r() * ODD.length)]!);
    parts.push(Buffer.from(eol));
  }
  parts.push(Buffer.from(eol));
  return Buffer.concat(parts);
}

describe("SSE events read lazily", () => {
  it("name and data are the whole event's, asked in either order, on random events cut at random places", () => {
    const r = seeded(42);
    for (let round = 0; round < 2000; round++) {
      const stream = Buffer.concat(Array.from({ length: 1 + Math.floor(r() * 5) }, () => randomEvent(r)));
      const splitter = new SseSplitter();
      const events = [];
      for (let at = 0; at < stream.length; ) {
        const n = 1 + Math.floor(r() * 40);
        events.push(...splitter.push(stream.subarray(at, at + n)));
        at += n;
      }
      expect(Buffer.concat([...events.map((e) => e.raw), splitter.rest()]).equals(stream)).toBe(true);
      for (const e of events) {
        const want = eager(e.raw);
        const dataFirst = r() < 0.5 ? e.data : undefined;
        const got = { event: e.event, data: dataFirst ?? e.data };
        if (got.event !== want.event || got.data !== want.data)
          expect({ raw: e.raw.toString("latin1"), ...got }).toEqual({ raw: e.raw.toString("latin1"), ...want });
      }
    }
  });

  it("the usual event: its name without decoding the data, and a second event line wins as before", () => {
    const [first] = new SseSplitter().push(Buffer.from('event: content_block_delta\ndata: {"type":"x"}\n\n'));
    expect(first!.event).toBe("content_block_delta");
    expect(first!.data).toBe('{"type":"x"}');
    const [twice] = new SseSplitter().push(Buffer.from("event: a\r\ndata: 1\r\nevent: b\r\n\r\n"));
    expect(twice!.event).toBe("b");
    expect(twice!.data).toBe("1");
  });
});
