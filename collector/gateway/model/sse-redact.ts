import { type CredentialScreen, findCredentials, type RedactResult, screenCredentials } from "../../../protocol/redact.ts";
import { sha256Hex } from "../../../protocol/index.ts";
import { closingQuote, jsonLine } from "./sse-json.ts";

/**
 * Redacts a streamed response by its content, not its framing (docs/collector.md, "The gateway"):
 * the string values of each event's JSON (the model's text, a tool call's arguments, ids), joined
 * across events per stream (same event name, same key, same content index), so a credential the
 * vendor split over two deltas is one match. Each match is cut out of the bytes where it stands:
 * the first piece becomes `[REDACTED:<kind>]`, the later pieces go; the removal's hash is of the
 * whole credential. A data line that is not plain JSON, and any line other than `data:` and an
 * ordinary `event:` name, is scanned as it is (as the whole text was before).
 */
export function redactSse(text: string): RedactResult {
  // By stream (event name and content index), then by key: no key string made per literal.
  const groups = new Map<string, Map<string, Segment[]>>();
  let lastStream: string | null = null;
  let lastByKey = new Map<string, Segment[]>();
  const add = (stream: string, key: string, s: Segment) => {
    let byKey = stream === lastStream ? lastByKey : groups.get(stream);
    if (!byKey) {
      byKey = new Map();
      groups.set(stream, byKey);
    }
    lastStream = stream;
    lastByKey = byKey;
    const g = byKey.get(key);
    if (g) g.push(s);
    else byKey.set(key, [s]);
  };
  let event = "";
  let eventLine = "";
  let other = 0;
  const otherKey = () => `\u0000other${other++}`;
  const lines = new DataLines(add, otherKey);
  for (let at = 0; at < text.length; ) {
    const nl = text.indexOf("\n", at);
    const end = nl < 0 ? text.length : nl;
    const lineEnd = end > at && text.charCodeAt(end - 1) === 13 ? end - 1 : end;
    if (lineEnd === at) event = "";
    // A data line is read where it stands (no copy of the line).
    else if (lineEnd - at >= 5 && text.startsWith("data:", at)) {
      const skip = text.charCodeAt(at + 5) === 32 ? 6 : 5;
      lines.read(text, at + skip, lineEnd, event);
    } else {
      const line = text.slice(at, lineEnd);
      if (line === eventLine) event = eventName(line);
      else if (line.startsWith("event:") && EVENT_NAME.test(line)) {
        eventLine = line;
        event = eventName(line);
      } else add(otherKey(), "", { start: at, end: lineEnd, value: line });
    }
    at = end + 1;
  }
  // Each stream's joined values screened at once: most responses hold no detector's hint, and end here.
  const joined: [Segment[], string][] = [];
  for (const byKey of groups.values()) for (const segments of byKey.values()) joined.push([segments, joinedValue(segments)]);
  const screen = screenCredentials(joined.map(([, j]) => j).join("\u0000"));
  if (!screen) return { text, redactions: [] };
  const cuts: Cut[] = [];
  for (const [segments, j] of joined) cutsOf(segments, j, screen, cuts);
  if (!cuts.length) return { text, redactions: [] };
  cuts.sort((a, b) => a.start - b.start);
  let out = "";
  let at = 0;
  const redactions: RedactResult["redactions"] = [];
  for (const c of cuts) {
    out += text.slice(at, c.start) + (c.first ? `[REDACTED:${c.first.kind}]` : "");
    if (c.first) redactions.push({ kind: c.first.kind, sha256: sha256Hex(c.first.secret) });
    at = c.end;
  }
  return { text: out + text.slice(at), redactions };
}

/** A string as it stands in the text: its span, its value, and (a JSON literal with escapes) its source, where offsets differ. */
interface Segment {
  start: number;
  end: number;
  value: string;
  source?: string;
}

/** A span of the text to replace: by the marker (the first piece of a credential), or by nothing. */
interface Cut {
  start: number;
  end: number;
  first: { kind: string; secret: string } | null;
}

// An ordinary event name is framing; anything else on an `event:` line is scanned.
const EVENT_NAME = /^event: ?[A-Za-z0-9_.-]{0,64}$/;
const eventName = (line: string) => line.slice(line.charCodeAt(6) === 32 ? 7 : 6);
/** A segment of a line's literal, as an offset from the line's start: what the next line of its shape adds again. */
interface Emit {
  key: string;
  start: number;
  end: number;
  value: string;
  source?: string;
}

/**
 * Data lines' segments by stream and key. Consecutive events of a stream mostly differ in their last
 * string literal alone (a delta's text). When a line's last literal is a value (no quote follows it,
 * or jsonLine would have read another literal or refused the line), the next line with the same
 * event name, the same text before that literal's body and after its closing quote, and no closing
 * quote inside the body, has the same literals (sse-json.ts reads a line left to right, and nothing
 * it reads before or after the body differs), the same indexes and the same structure. Its segments
 * are the last line's, moved, and its own last body: not read again.
 */
class DataLines {
  #event = "";
  #prefix = "";
  #suffix = "";
  #stream = "";
  #emits: Emit[] | null = null;
  #lastKey = "";

  readonly #add: (stream: string, key: string, s: Segment) => void;
  readonly #otherKey: () => string;

  constructor(add: (stream: string, key: string, s: Segment) => void, otherKey: () => string) {
    this.#add = add;
    this.#otherKey = otherKey;
  }

  read(text: string, from: number, to: number, event: string): void {
    const add = this.#add;
    const otherKey = this.#otherKey;
    const data = text.slice(from, to);
    const emits = this.#emits;
    if (
      emits &&
      event === this.#event &&
      data.startsWith(this.#prefix) &&
      data.endsWith(this.#suffix) &&
      closingQuote(data, this.#prefix.length - 1) === data.length - this.#suffix.length
    ) {
      for (const e of emits) add(this.#stream, e.key, { start: from + e.start, end: from + e.end, value: e.value, source: e.source });
      const body = data.slice(this.#prefix.length, data.length - this.#suffix.length);
      if (body.length) add(this.#stream, this.#lastKey, literalSegment(body, from + this.#prefix.length));
      return;
    }
    this.#emits = null;
    const c = data.charCodeAt(0);
    const line = c === 123 || c === 91 ? jsonLine(data) : null;
    // `[DONE]`, or anything else that is not a JSON object or array: scanned as it is.
    if (!line) {
      add(data === "[DONE]" ? `${event}\u0000done` : otherKey(), "", { start: from, end: to, value: data });
      return;
    }
    const stream = `${event}\u0000${line.index}`;
    const made: Emit[] = [];
    let key = "";
    for (const l of line.literals) {
      if (l.key) {
        key = data.slice(l.start, l.end);
        continue;
      }
      if (l.end === l.start) continue;
      const s = literalSegment(data.slice(l.start, l.end), from + l.start);
      add(stream, key, s);
      made.push({ key, start: s.start - from, end: s.end - from, value: s.value, source: s.source });
    }
    const last = line.literals.at(-1);
    if (!last || last.key) return;
    if (last.end > last.start) made.pop();
    this.#event = event;
    this.#prefix = data.slice(0, last.start);
    this.#suffix = data.slice(last.end);
    this.#stream = stream;
    this.#emits = made;
    this.#lastKey = key;
  }
}

/** A JSON string literal's segment: its value decoded (an escape it cannot decode leaves it scanned as written). */
function literalSegment(body: string, start: number): Segment {
  const end = start + body.length;
  if (!body.includes("\\")) return { start, end, value: body };
  try {
    return { start, end, value: JSON.parse(`"${body}"`) as string, source: body };
  } catch {
    return { start, end, value: body };
  }
}

/** The cuts of one stream's credentials: its segments' values joined, scanned once, each match mapped back to the pieces it spans. */
function cutsOf(segments: Segment[], joined: string, screen: CredentialScreen, cuts: Cut[]): void {
  const matches = findCredentials(joined, undefined, screen);
  if (!matches.length) return;
  let si = 0;
  let base = 0;
  for (const m of matches) {
    while (base + segments[si]!.value.length <= m.start) base += segments[si++]!.value.length;
    let first = true;
    for (let i = si, b = base; i < segments.length && b < m.end; b += segments[i]!.value.length, i++) {
      const s = segments[i]!;
      const from = Math.max(m.start - b, 0);
      const to = Math.min(m.end - b, s.value.length);
      if (to <= from) continue;
      cuts.push({
        start: s.start + rawOffset(s, from),
        end: s.start + rawOffset(s, to),
        // A credential read through a JSON escape can hold a lone surrogate, which has no UTF-8 form
        // to hash: it is hashed as UTF-8 encoding writes it (each lone surrogate U+FFFD).
        first: first ? { kind: m.kind, secret: joined.slice(m.start, m.end).toWellFormed() } : null,
      });
      first = false;
    }
  }
}

function joinedValue(segments: Segment[]): string {
  return segments.length === 1 ? segments[0]!.value : segments.map((s) => s.value).join("");
}

/** Where the value's UTF-16 offset `n` stands in the segment's bytes: a JSON escape (`\uXXXX`, `\n`, …) is one unit of the value. */
function rawOffset(s: Segment, n: number): number {
  if (s.source === undefined) return n;
  const src = s.source;
  let r = 0;
  for (let v = 0; v < n && r < src.length; v++) r += src.charCodeAt(r) !== 92 ? 1 : src.charCodeAt(r + 1) === 117 ? 6 : 2;
  return r;
}
