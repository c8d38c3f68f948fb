import { sql } from "drizzle-orm";
import { type Db, schema } from "../db/client.ts";
import { AppError } from "../errors.ts";

/** Runs one host may start per hour. */
export const RUNS_PER_HOUR = 600;
/** New agent names (harnesses and custom agents) one host may bring per day. */
export const AGENT_NAMES_PER_DAY = 32;
const HOUR_MS = 60 * 60_000;
const DAY_MS = 24 * HOUR_MS;

interface Window {
  what: string;
  limit: number;
  windowMs: number;
  /** The creation times in the window, oldest first, of what the host already made. */
  recent: number[];
  /** How many the request would add. */
  adding: number;
}

/** A quota refused: 429 with the seconds until enough of the window has passed. */
export class QuotaError extends AppError {
  readonly retryAfterS: number;
  constructor(message: string, retryAfterS: number, issues: { chain?: string; at: string; problem: string }[]) {
    super(429, "quota_exceeded", message, { issues });
    this.name = "QuotaError";
    this.retryAfterS = retryAfterS;
  }
}

// Seconds until the window holds room for `adding` more, or null when it has room now.
function waitFor(w: Window, now: number): number | null {
  const excess = w.recent.length + w.adding - w.limit;
  if (excess <= 0) return null;
  const freedAt = (w.recent[excess - 1] ?? now) + w.windowMs;
  return Math.max(1, Math.ceil((freedAt - now) / 1000));
}

/**
 * Checks one host's quotas for what a request would create: new runs (per hour) and new agent
 * names (per day). Refuses the request as a whole (nothing is written) with 429 and Retry-After,
 * naming the chains that would have created something, so a collector holds back only those.
 */
export async function checkQuotas(
  d: Db,
  hostId: string,
  wanted: { runs: { chain: string; at: string }[]; names: { name: string; chain?: string; at: string }[] },
  now: number,
): Promise<void> {
  if (wanted.runs.length === 0 && wanted.names.length === 0) return;
  const r = schema.runs;
  const a = schema.agents;
  const runIds = JSON.stringify(wanted.runs.map((w) => w.chain));
  const names = JSON.stringify([...new Set(wanted.names.map((w) => w.name))]);
  const [knownRuns, recentRuns, knownNames, recentNames] = await d.batch([
    d.select({ id: r.id }).from(r).where(sql`${r.id} IN (SELECT value FROM json_each(${runIds}))`),
    d
      .select({ t: r.createdMs })
      .from(r)
      .where(sql`${r.hostId} = ${hostId} AND ${r.createdMs} > ${now - HOUR_MS}`)
      .orderBy(r.createdMs)
      .limit(RUNS_PER_HOUR + 1),
    d.select({ name: a.name }).from(a).where(sql`${a.hostId} = ${hostId} AND ${a.name} IN (SELECT value FROM json_each(${names}))`),
    d
      .select({ t: a.createdMs })
      .from(a)
      .where(sql`${a.hostId} = ${hostId} AND ${a.createdMs} > ${now - DAY_MS}`)
      .orderBy(a.createdMs)
      .limit(AGENT_NAMES_PER_DAY + 1),
  ]);
  const oldRuns = new Set(knownRuns.map((x) => x.id));
  const newRuns = wanted.runs.filter((w) => !oldRuns.has(w.chain));
  const oldNames = new Set(knownNames.map((x) => x.name));
  const newNames = wanted.names.filter((w) => !oldNames.has(w.name));
  const windows: [Window, { chain?: string; at: string }[]][] = [
    [
      {
        what: `${RUNS_PER_HOUR} new runs an hour`,
        limit: RUNS_PER_HOUR,
        windowMs: HOUR_MS,
        recent: recentRuns.map((x) => x.t!),
        adding: newRuns.length,
      },
      newRuns,
    ],
    [
      {
        what: `${AGENT_NAMES_PER_DAY} new agent names a day`,
        limit: AGENT_NAMES_PER_DAY,
        windowMs: DAY_MS,
        recent: recentNames.map((x) => x.t!),
        adding: new Set(newNames.map((n) => n.name)).size,
      },
      newNames,
    ],
  ];
  for (const [w, parts] of windows) {
    const wait = waitFor(w, now);
    if (wait === null) continue;
    const issues = parts.map((p) => ({
      ...(p.chain ? { chain: p.chain } : {}),
      at: p.at,
      problem: `over this computer's quota of ${w.what}`,
    }));
    throw new QuotaError(`This computer is over its quota of ${w.what}; nothing was stored. Retry after ${wait} s.`, wait, issues);
  }
}
