import { findCredentials, type RedactResult } from "../../../protocol/redact.ts";
import { sha256Hex } from "../../../protocol/index.ts";
import { jsonLine } from "./sse-json.ts";

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
  const add = (stream: string, key: string, s: Segment) => {
    let byKey = groups.get(stream);
    if (!byKey) {
      byKey = new Map();
      groups.set(stream, byKey);
    }
    const g = byKey.get(key);
    if (g) g.push(s);
    else byKey.set(key, [s]);
  };
  let event = "";
  let other = 0;
  const otherKey = () => `\u0000other${other++}`;
  for (let at = 0; at < text.length; ) {
    const nl = text.indexOf("\n", at);
    const end = nl < 0 ? text.length : nl;
    const lineEnd = end > at && text.charCodeAt(end - 1) === 13 ? end - 1 : end;
    if (lineEnd === at) event = "";
    // A data line is read where it stands (no copy of the line).
    else if (lineEnd - at >= 5 && text.startsWith("data:", at)) {
      const skip = text.charCodeAt(at + 5) === 32 ? 6 : 5;
      dataSegments(text, at + skip, lineEnd, event, add, otherKey);
    } else {
      const line = text.slice(at, lineEnd);
      if (line.startsWith("event:") && EVENT_NAME.test(line)) event = line.slice(line.charCodeAt(6) === 32 ? 7 : 6);
      else add(otherKey(), "", { start: at, end: lineEnd, value: line });
    }
    at = end + 1;
  }
  const cuts: Cut[] = [];
  for (const byKey of groups.values()) for (const segments of byKey.values()) cutsOf(segments, cuts);
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
function dataSegments(
  text: string,
  from: number,
  to: number,
  event: string,
  add: (stream: string, key: string, s: Segment) => void,
  otherKey: () => string,
): void {
  const data = text.slice(from, to);
  const c = data.charCodeAt(0);
  const line = c === 123 || c === 91 ? jsonLine(data) : null;
  // `[DONE]`, or anything else that is not a JSON object or array: scanned as it is.
  if (!line) {
    add(data === "[DONE]" ? `${event}\u0000done` : otherKey(), "", { start: from, end: to, value: data });
    return;
  }
  const stream = `${event}\u0000${line.index}`;
  let key = "";
  for (const l of line.literals) {
    if (l.key) {
      key = data.slice(l.start, l.end);
      continue;
    }
    if (l.end === l.start) continue;
    add(stream, key, literalSegment(data.slice(l.start, l.end), from + l.start));
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
function cutsOf(segments: Segment[], cuts: Cut[]): void {
  const joined = segments.length === 1 ? segments[0]!.value : segments.map((s) => s.value).join("");
  const matches = findCredentials(joined);
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

/** Where the value's UTF-16 offset `n` stands in the segment's bytes: a JSON escape (`\uXXXX`, `\n`, …) is one unit of the value. */
function rawOffset(s: Segment, n: number): number {
  if (s.source === undefined) return n;
  const src = s.source;
  let r = 0;
  for (let v = 0; v < n && r < src.length; v++) r += src.charCodeAt(r) !== 92 ? 1 : src.charCodeAt(r + 1) === 117 ? 6 : 2;
  return r;
}
