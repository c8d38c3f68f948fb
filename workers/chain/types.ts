import type { ChainAck, Frame, SignedLock } from "../../protocol/index.ts";

/** Run status, as the D1 row and the manifest name it. */
export type RunStatus = "live" | "ended" | "crashed" | "closed" | "sealed";

/** What the Worker tells a ChainObject about its chain on every call that may create it. */
export interface ChainInit {
  chain: string;
  kind: "run" | "host";
  workspace: string;
  hostId: string;
  /** Hex Ed25519 public key of the host; locks are checked against it. */
  hostKey: string;
  harness: string | null;
  agent: string | null;
  sessionId: string | null;
  mode: "enforce" | "observe";
}

/** One chain's part of a batch, already checked by the Worker (form, schema, ownership). */
export interface ChainIngest {
  init: ChainInit;
  frames: Frame[];
  locks: SignedLock[];
  now: number;
}

/** What the ChainObject holds about its run; the D1 row is a copy of it. */
export interface ChainSummary {
  chain: string;
  kind: "run" | "host";
  workspace: string;
  hostId: string;
  harness: string | null;
  agent: string | null;
  sessionId: string | null;
  status: RunStatus;
  outcome: string | null;
  tier: { value: string; reason: string };
  grade: { value: string; reason: string };
  spendMicrousd: number;
  frameCount: number;
  lockCount: number;
  gapCount: number;
  heldCount: number;
  firstFrameMs: number | null;
  lastFrameMs: number | null;
  lastReceivedMs: number | null;
  /** Bumped on every change, so a stale copy never overwrites a newer one in D1. */
  version: number;
}

/** The answer to an ingest part: the wire ack plus the summary for D1. */
export interface ChainIngestResult {
  ack: ChainAck;
  summary: ChainSummary;
}

/** A page of stored frames. */
export interface FramePage {
  frames: (Frame & { hash: string; received_ms: number })[];
  next: number | null;
}
