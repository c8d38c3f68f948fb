import type { Gap } from "../../protocol/index.ts";
import { FLAG_KEPT_BODIES } from "./frames.ts";

/** Missing body hashes per page (67 bytes each in a bundle line). */
export const MISSING_BODIES_PAGE = 16_384;

/**
 * The missing-bodies rule, the one place it is written: the kept bodies the frames below seq
 * `frames` name that the `bodies` table does not hold (never received), each once, in hash order,
 * after `after`, at most `limit`. SQLite walks the payloads, so no list of them is held here.
 */
export function missingBodies(sql: SqlStorage, frames: number, after = "", limit = MISSING_BODIES_PAGE): string[] {
  return sql
    .exec<{ sha: string }>(
      `SELECT DISTINCT json_extract(b.value, '$.sha256') AS sha
         FROM frames f, json_each(f.payload, '$.bodies') b
        WHERE f.flags & ${FLAG_KEPT_BODIES} AND f.seq < ? AND json_extract(b.value, '$.kept') = 1
          AND json_extract(b.value, '$.sha256') > ?
          AND NOT EXISTS (SELECT 1 FROM bodies WHERE bodies.sha256 = json_extract(b.value, '$.sha256'))
        ORDER BY sha LIMIT ?`,
      frames,
      after,
      limit,
    )
    .toArray()
    .map((r) => r.sha);
}

/** The `missing_bodies` gap of every kept body the chain's `frames` frames name that never arrived, or null when none is missing. */
export function missingBodiesGap(sql: SqlStorage, frames: number): Gap | null {
  const missing: string[] = [];
  for (let page = missingBodies(sql, frames); ; page = missingBodies(sql, frames, page.at(-1)!)) {
    missing.push(...page);
    if (page.length < MISSING_BODIES_PAGE) break;
  }
  if (missing.length === 0) return null;
  return {
    kind: "missing_bodies",
    source: "server",
    bodies: missing,
    detail: `${missing.length} kept bodies named by the record never reached the server`,
  };
}

/** Notes a body the chain may name as received. */
export function bodyReceived(sql: SqlStorage, sha256: string, now: number): void {
  sql.exec("INSERT OR IGNORE INTO bodies (sha256, received_ms) VALUES (?, ?)", sha256, now);
}
