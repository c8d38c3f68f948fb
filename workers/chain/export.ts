import {
  emptyTally,
  equivocationLine,
  frameLine,
  type Gap,
  lockLine,
  type ParsedPayload,
  type PayloadTally,
  tallyFrame,
} from "../../protocol/index.ts";
import { MISSING_BODIES_PAGE, missingBodies } from "./bodies.ts";
import type { ChainCore } from "./core.ts";
import type { ChainSummary } from "./types.ts";

/**
 * The most a page of an export holds, in characters of bundle lines (plus one row that started
 * below it): a frame payload is at most 64 Ki characters, so a page stays under 2 MiB of text,
 * far below the 32 MiB an RPC value may be.
 */
export const PAGE_CHARS = 1024 * 1024;
/** The most rows a page reads. */
const PAGE_ROWS = 8192;

/**
 * What an export streams from: the run as it is when the export starts, and how far each table
 * reached then. Frames, locks, evidence and gaps are only ever added, so pages read below these
 * bounds are one consistent snapshot however long the export takes.
 */
export interface ExportHead {
  summary: ChainSummary;
  mode: "enforce" | "observe";
  hostKey: string;
  /** Frames below this seq, locks below this lock_seq. */
  frames: number;
  locks: number;
  /** Evidence and server gaps up to these row ids. */
  equivocations: number;
  gaps: number;
  /** Whether the export lists the kept bodies that have not arrived (no `missing_bodies` gap is in the book yet). */
  missingBodies: boolean;
}

/** One page of an export: rows from `after` (exclusive) or `from`, below the head's bounds. */
export type ExportPageRequest =
  | { section: "locks" | "frames"; from: number; to: number }
  | { section: "equivocations" | "gaps"; after: number; upTo: number }
  | { section: "missing_bodies"; after: string; frames: number };

/** A page of an export: bundle lines (locks, frames, evidence), or gaps, or missing body hashes. */
export interface ExportPage {
  /** Complete bundle lines, each ending with LF. */
  lines: string;
  /** The tally of the frames on the page (frames only). */
  tally: PayloadTally | null;
  gaps: Gap[];
  bodies: string[];
  /** Where the next page starts, or null when the section is done. */
  next: number | string | null;
}

/** The head of an export, or null when the chain holds nothing. */
export function exportHead(sql: SqlStorage, core: ChainCore): ExportHead | null {
  const st = core.state();
  if (!st) return null;
  const max = (table: string) => sql.exec<{ n: number }>(`SELECT coalesce(max(id), 0) AS n FROM ${table}`).one().n;
  const sealedBodies = sql.exec(`SELECT 1 FROM gaps WHERE json_extract(gap, '$.kind') = 'missing_bodies' LIMIT 1`).toArray().length > 0;
  return {
    summary: core.summary(st),
    mode: st.mode,
    hostKey: st.hostKey,
    frames: st.count,
    locks: st.lockNext,
    equivocations: max("equivocations"),
    gaps: max("gaps"),
    missingBodies: !sealedBodies,
  };
}

/** One page of an export. */
export function exportPage(sql: SqlStorage, req: ExportPageRequest): ExportPage {
  const page: ExportPage = { lines: "", tally: null, gaps: [], bodies: [], next: null };
  const lines: string[] = [];
  let chars = 0;
  // Rows come in order; the page ends once it holds PAGE_CHARS, and the next starts at the row after.
  const take = <R extends Record<string, SqlStorageValue>>(rows: Iterable<R>, line: (r: R) => string, key: (r: R) => number) => {
    let last: number | null = null;
    let count = 0;
    for (const r of rows) {
      if (chars >= PAGE_CHARS) break;
      const text = line(r);
      lines.push(text, "\n");
      chars += text.length + 1;
      last = key(r);
      count++;
    }
    page.lines = lines.join("");
    return { last, full: chars >= PAGE_CHARS || count === PAGE_ROWS };
  };
  switch (req.section) {
    case "frames": {
      const tally = emptyTally();
      const rows = sql.exec<{ seq: number; t: number; kind: string; payload: string; hash: string }>(
        "SELECT seq, t, kind, payload, hash FROM frames WHERE seq >= ? AND seq < ? ORDER BY seq LIMIT ?",
        req.from,
        req.to,
        PAGE_ROWS,
      );
      const { last, full } = take(
        rows,
        (r) => {
          tallyFrame(tally, r.seq, r.kind, JSON.parse(r.payload) as ParsedPayload);
          return frameLine(r);
        },
        (r) => r.seq,
      );
      page.tally = tally;
      page.next = full && last !== null && last + 1 < req.to ? last + 1 : null;
      return page;
    }
    case "locks": {
      const rows = sql.exec<{ lock_seq: number; payload: string; sig: string; received_ms: number }>(
        "SELECT lock_seq, payload, sig, received_ms FROM locks WHERE lock_seq >= ? AND lock_seq < ? ORDER BY lock_seq LIMIT ?",
        req.from,
        req.to,
        PAGE_ROWS,
      );
      const { last, full } = take(rows, lockLine, (r) => r.lock_seq);
      page.next = full && last !== null && last + 1 < req.to ? last + 1 : null;
      return page;
    }
    case "equivocations": {
      const rows = sql.exec<{ id: number; what: "frame" | "lock"; seq: number; evidence: string; received_ms: number }>(
        "SELECT id, what, seq, evidence, received_ms FROM equivocations WHERE id > ? AND id <= ? ORDER BY id LIMIT ?",
        req.after,
        req.upTo,
        PAGE_ROWS,
      );
      const { last, full } = take(rows, equivocationLine, (r) => r.id);
      page.next = full && last !== null && last < req.upTo ? last : null;
      return page;
    }
    case "gaps": {
      const rows = sql.exec<{ id: number; gap: string }>(
        "SELECT id, gap FROM gaps WHERE id > ? AND id <= ? ORDER BY id LIMIT ?",
        req.after,
        req.upTo,
        PAGE_ROWS,
      );
      let last: number | null = null;
      for (const r of rows) {
        if (chars >= PAGE_CHARS) break;
        page.gaps.push(JSON.parse(r.gap) as Gap);
        chars += r.gap.length;
        last = r.id;
      }
      page.next = last !== null && (chars >= PAGE_CHARS || page.gaps.length === PAGE_ROWS) && last < req.upTo ? last : null;
      return page;
    }
    case "missing_bodies": {
      page.bodies = missingBodies(sql, req.frames, req.after);
      page.next = page.bodies.length === MISSING_BODIES_PAGE ? page.bodies.at(-1)! : null;
      return page;
    }
  }
}
