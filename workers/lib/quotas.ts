import { AppError } from "../errors.ts";

/** Runs one host may start per hour. */
export const RUNS_PER_HOUR = 600;
/** New agent names (harnesses and custom agents) one host may bring per day. */
export const AGENT_NAMES_PER_DAY = 32;

/** What a request would create, for the host's quotas: new runs (by chain id) and agent names, each with where the request names it. */
export interface QuotaWanted {
  runs: { chain: string; at: string }[];
  names: { name: string; chain?: string; at: string }[];
}

/** A quota the request would pass: the sentence, the seconds until there is room, and the parts concerned. */
export interface QuotaRefusal {
  message: string;
  retryAfterS: number;
  issues: { chain?: string; at: string; problem: string }[];
}

/** A quota refused: 429 with the seconds until enough of the window has passed. */
export class QuotaError extends AppError {
  readonly retryAfterS: number;
  constructor(refusal: QuotaRefusal) {
    super(429, "quota_exceeded", refusal.message, { issues: refusal.issues });
    this.name = "QuotaError";
    this.retryAfterS = refusal.retryAfterS;
  }
}

/** Refuses the request (429) when the host's object found it over a quota. */
export function throwIfOver(refusal: QuotaRefusal | null): void {
  if (refusal) throw new QuotaError(refusal);
}
