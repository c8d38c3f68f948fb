// The types of the gateway's budget leases (lease.ts): a call's reservation, the holder's options,
// and what it keeps per run.
/** What asking the server came to. */
export type Heard = "granted" | "refused" | "unreachable" | "nothing";

/** A call's reservation, or why it has none. */
export type Held = Reservation | { refused: string };

/** A call's hold on its run's slice: taken before it is forwarded, given back by {@link BudgetLeases.done}. */
export interface Reservation {
  run: string;
  /** What the call holds of the slice: its maximum cost, or 0 when it was let through unreserved (server unreachable). */
  microusd: number;
}

export interface LeaseOptions {
  /** How long each lease is held (renewed while its run makes calls). */
  ttlMs: number;
  /** A slice is this many times the largest maximum cost the run has asked for. */
  sliceCalls: number;
  /** A run with no call in flight and none for this long gives its lease back. */
  idleMs: number;
  /** After a refusal or an unreachable server, how long a call that does not fit is answered without asking again. */
  retryMs: number;
  now: () => number;
  log: (msg: string) => void;
}

export interface Slice {
  run: string;
  leaseId: string | null;
  /** What the server's lease holds, as this side counts it (a priced call comes off both; never more than the server's last answer). */
  held: number;
  /** The maximum costs of the calls in flight. */
  reserved: number;
  /** The maximum costs of the calls waiting for the server. */
  waiting: number;
  /** The calls waiting, in the order they came: served in that order, none overtaken by a later one. */
  queue: { microusd: number; resolve(h: Held): void }[];
  /** The queue is being served (one server request at a time). */
  serving: boolean;
  /**
   * The least room the run's scopes had left at the server's last answer; null when unknown or no
   * clause limits it. Scarce room: the slice holds only what its calls need, and gives back the rest.
   */
  room: number | null;

  /** When the lease expires, by this side's clock: the request's send time plus the ttl (the server's `expires_ms` is by its clock, and is later). */
  expires: number;
  asking: Promise<Heard> | null;
  /** The last refusal (409) and when; the reason a call that does not fit is given. */
  refused: { reason: string; at: number } | null;
  /** When the server last could not be asked; calls are let through unreserved until it can. */
  unreachable: number | null;
  lastUse: number;
  biggest: number;
}
