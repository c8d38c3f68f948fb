/** One JSON string literal of a data line: where its body stands, and whether it is a key (a colon follows). */
export interface JsonLiteral {
  /** Offset of the body's first character (after the opening quote). */
  start: number;
  /** Offset of the closing quote. */
  end: number;
  key: boolean;
}

/** What a data line that is a JSON text holds for the scan: its string literals and its content indexes (`index`, `output_index`, `content_index`). */
export interface JsonLine {
  literals: JsonLiteral[];
  /** The indexes' digits in order, each followed by a comma: which stream of the response the line belongs to. */
  index: string;
}

// What may stand between a JSON text's string literals: structure, numbers, true, false, null.
const STRUCTURE = /^[\s{}[\],:0-9eE.+-]*$/;
const WORDS = /true|false|null/g;
const INDEX_NAMES = ["index", "output_index", "content_index"];

/**
 * A data line's string literals in one pass, or null when anything but structure, numbers, true,
 * false and null stands between them (the line is then scanned as it is). Written out by hand
 * rather than as a regular expression (`"((?:[^"\\]|\\.)*)"(\s*:)?`) because this runs on every
 * event of every stream; it takes the same literals that expression took, malformed input included
 * (test/node/gateway-sse-redact-differential.test.ts holds it to that expression's results).
 */
export function jsonLine(data: string): JsonLine | null {
  const literals: JsonLiteral[] = [];
  let index = "";
  let between = "";
  let at = 0;
  for (let open = data.indexOf('"'); open >= 0; ) {
    const close = closingQuote(data, open);
    // No literal starts at this quote: the expression's search went on to the next one, but this
    // quote (not structure) would stand between literals whatever it found, so the line is not JSON.
    if (close < 0) return null;
    let after = close + 1;
    while (isSpace(data.charCodeAt(after))) after++;
    const key = data.charCodeAt(after) === 58;
    between += data.slice(at, open);
    at = key ? after + 1 : close + 1;
    literals.push({ start: open + 1, end: close, key });
    if (key && data.charCodeAt(close - 1) === 120) index += indexAfter(data, open + 1, close, at);
    open = data.indexOf('"', at);
  }
  between += data.slice(at);
  return STRUCTURE.test(between.replace(WORDS, "")) ? { literals, index } : null;
}

/** The closing quote of a literal opened at `open`, or -1: a backslash escapes the next character unless that is a line terminator (`.` in the expression). */
export function closingQuote(s: string, open: number): number {
  let from = open + 1;
  for (;;) {
    const quote = s.indexOf('"', from);
    if (quote < 0) return -1;
    const slash = s.indexOf("\\", from);
    if (slash < 0 || slash > quote) return quote;
    const escaped = s.charCodeAt(slash + 1);
    if (slash + 1 >= s.length || escaped === 10 || escaped === 13 || escaped === 0x2028 || escaped === 0x2029) return -1;
    from = slash + 2;
  }
}

/**
 * A key literal that reads `"index"` (or `output_index`, `content_index`) up to its closing quote,
 * the quote before the name being the literal's own or an escaped one inside it, followed by digits:
 * those digits and a comma; otherwise nothing.
 */
function indexAfter(data: string, bodyStart: number, close: number, afterColon: number): string {
  for (const name of INDEX_NAMES) {
    const from = close - name.length;
    if (from < bodyStart || !data.startsWith(name, from)) continue;
    if (from !== bodyStart && data.charCodeAt(from - 1) !== 34) continue;
    let d = afterColon;
    while (isSpace(data.charCodeAt(d))) d++;
    let e = d;
    while (e < data.length && data.charCodeAt(e) >= 48 && data.charCodeAt(e) <= 57) e++;
    return e > d ? `${data.slice(d, e)},` : "";
  }
  return "";
}

/** JavaScript's `\s`: the ASCII spaces and Unicode's space separators, line terminators and BOM. */
function isSpace(c: number): boolean {
  if (c === 32 || (c >= 9 && c <= 13)) return true;
  if (c < 160) return false;
  return (
    c === 160 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}
