/** One complete line of a JSONL file and the byte offset just after its newline. */
export interface Line {
  text: string;
  /** Byte offset of the line's first byte in the file. */
  at: number;
  /** Byte offset just after the line's newline: where the next read starts. */
  end: number;
}

/**
 * The complete lines of a chunk read at byte offset `base`. A last line without its newline is
 * left for the next read (the harness may still be writing it), so `consumed` stops before it.
 */
export function splitLines(chunk: Uint8Array, base: number): { lines: Line[]; consumed: number } {
  const lines: Line[] = [];
  const decoder = new TextDecoder("utf-8", { fatal: false });
  let start = 0;
  for (let i = 0; i < chunk.length; i++) {
    if (chunk[i] !== 0x0a) continue;
    const text = decoder.decode(chunk.subarray(start, i)).replace(/\r$/, "");
    if (text.trim()) lines.push({ text, at: base + start, end: base + i + 1 });
    start = i + 1;
  }
  return { lines, consumed: start };
}

/** A line's timestamp in ms, or `fallback` when it has none. */
export function timeOf(o: Record<string, unknown>, fallback: number): number {
  const t = typeof o.timestamp === "string" ? Date.parse(o.timestamp) : NaN;
  return Number.isFinite(t) && t > 0 ? t : fallback;
}
