import { AGENT_NAMES_PER_DAY, type QuotaRefusal, type QuotaWanted, RUNS_PER_HOUR } from "../lib/quotas.ts";

const HOUR_MS = 60 * 60_000;
const DAY_MS = 24 * HOUR_MS;
/** A run the host has not shipped for this long is forgotten (a later batch of it counts as a new run). */
export const RUN_KEPT_MS = 7 * DAY_MS;
/** How stale a run's `seen_ms` may get before a batch of it moves it on (one write an hour per live run). */
const SEEN_STEP_MS = HOUR_MS;

interface Window {
  what: string;
  limit: number;
  windowMs: number;
  /** The creation times in the window, oldest first, of what the host already made. */
  recent: number[];
  /** How many the request would add. */
  adding: number;
}

// Seconds until the window holds room for `adding` more, or null when it has room now.
function waitFor(w: Window, now: number): number | null {
  const excess = w.recent.length + w.adding - w.limit;
  if (excess <= 0) return null;
  const freedAt = (w.recent[excess - 1] ?? now) + w.windowMs;
  return Math.max(1, Math.ceil((freedAt - now) / 1000));
}

function recent(sql: SqlStorage, table: "runs" | "names", since: number, limit: number): number[] {
  return sql
    .exec<{ t: number }>(`SELECT created_ms AS t FROM ${table} WHERE created_ms > ? ORDER BY created_ms LIMIT ?`, since, limit + 1)
    .toArray()
    .map((r) => r.t);
}

/**
 * Checks one host's quotas for what a request would create, new runs (per hour) and new agent
 * names (per day), against the host's own tables: a refusal naming the parts that would have
 * created something (nothing is recorded), or null, and then what is new is recorded as created
 * now. Each query reads an index range bounded by the quota, whatever the host's history.
 */
export function admitQuotas(sql: SqlStorage, wanted: QuotaWanted, now: number): QuotaRefusal | null {
  if (wanted.runs.length === 0 && wanted.names.length === 0) return null;
  const known = (table: "runs" | "names", key: "id" | "name", value: string) =>
    sql
      .exec<{ seen: number }>(`SELECT ${table === "runs" ? "seen_ms" : "created_ms"} AS seen FROM ${table} WHERE ${key} = ?`, value)
      .toArray()[0];
  const seen = new Map(wanted.runs.map((w) => [w.chain, known("runs", "id", w.chain)?.seen]));
  const newRuns = wanted.runs.filter((w) => seen.get(w.chain) === undefined);
  const newNames = wanted.names.filter((w) => known("names", "name", w.name) === undefined);
  const windows: [Window, { chain?: string; at: string }[]][] = [
    [
      {
        what: `${RUNS_PER_HOUR} new runs an hour`,
        limit: RUNS_PER_HOUR,
        windowMs: HOUR_MS,
        recent: newRuns.length > 0 ? recent(sql, "runs", now - HOUR_MS, RUNS_PER_HOUR) : [],
        adding: new Set(newRuns.map((r) => r.chain)).size,
      },
      newRuns,
    ],
    [
      {
        what: `${AGENT_NAMES_PER_DAY} new agent names a day`,
        limit: AGENT_NAMES_PER_DAY,
        windowMs: DAY_MS,
        recent: newNames.length > 0 ? recent(sql, "names", now - DAY_MS, AGENT_NAMES_PER_DAY) : [],
        adding: new Set(newNames.map((n) => n.name)).size,
      },
      newNames,
    ],
  ];
  for (const [w, parts] of windows) {
    const wait = waitFor(w, now);
    if (wait === null) continue;
    return {
      message: `This computer is over its quota of ${w.what}; nothing was stored. Retry after ${wait} s.`,
      retryAfterS: wait,
      issues: parts.map((p) => ({ ...(p.chain ? { chain: p.chain } : {}), at: p.at, problem: `over this computer's quota of ${w.what}` })),
    };
  }
  for (const r of newRuns) sql.exec("INSERT OR IGNORE INTO runs (id, created_ms, seen_ms) VALUES (?, ?, ?)", r.chain, now, now);
  for (const n of newNames) sql.exec("INSERT OR IGNORE INTO names (name, created_ms) VALUES (?, ?)", n.name, now);
  for (const [id, at] of seen)
    if (at !== undefined && at < now - SEEN_STEP_MS) sql.exec("UPDATE runs SET seen_ms = ? WHERE id = ?", now, id);
  // A bounded step of the week-old runs each time, so the table holds about a week of the host's runs.
  sql.exec("DELETE FROM runs WHERE id IN (SELECT id FROM runs WHERE seen_ms < ? ORDER BY seen_ms LIMIT 100)", now - RUN_KEPT_MS);
  return null;
}

/** Takes what D1 already knew of the host (its agent names and its runs of the last hour) into an object that had nothing. */
export function seedQuotas(
  sql: SqlStorage,
  names: { name: string; createdMs: number | null }[],
  runs: { id: string; createdMs: number | null }[],
  now: number,
): void {
  for (const n of names) sql.exec("INSERT OR IGNORE INTO names (name, created_ms) VALUES (?, ?)", n.name, n.createdMs ?? 0);
  for (const r of runs) sql.exec("INSERT OR IGNORE INTO runs (id, created_ms, seen_ms) VALUES (?, ?, ?)", r.id, r.createdMs ?? 0, now);
}
