import type { ChainAck, Frame, SignedLock } from "../../protocol/index.ts";

/** Run status, as the D1 row and the manifest name it. */
export type RunStatus = "live" | "ended" | "crashed" | "closed" | "sealed";

/** What the Worker tells a ChainObject about its chain on every call that may create it. */
export interface ChainInit {
  chain: string;
  kind: "run" | "host";
  workspace: string;
  hostId: string;
  /** Hex Ed25519 public key of the host now: a new chain's key until its first lock names one. */
  hostKey: string;
  /**
   * Every key the host holds or held (hex, by key id), the current one first. A chain's first lock
   * pins the one it names; every later lock of the chain must be signed by it, so one key locks a
   * chain from its first lock to its last, across a rotation.
   */
  hostKeys: { keyId: string; pub: string }[];
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
  /** The record's own outcome: agent_stop's, `crashed` for an unobserved tail, `unknown` once closed by the server. */
  outcome: string | null;
  /** The server's reading of the run from its frames (chain/outcome.ts). */
  derived: { value: string; reason: string };
  /** Model calls the vendor answered or that failed (llm_call frames, and those the gateway answered itself). */
  modelCalls: number;
  /** Of those, the ones that failed. */
  modelFailed: number;
  tier: { value: string; reason: string };
  grade: { value: string; reason: string };
  /** Priced model calls, in millionths of a dollar, as the server priced them. */
  spendMicrousd: number;
  /** Model calls the price table does not know. */
  unpricedCalls: number;
  frameCount: number;
  lockCount: number;
  gapCount: number;
  heldCount: number;
  /** The computer ended the session: an agent_stop arrived, stored or refused after a seal. */
  hostStopped: boolean;
  firstFrameMs: number | null;
  lastFrameMs: number | null;
  /** Server clock of the last frame received, stored or refused. */
  lastReceivedMs: number | null;
  /** Bumped on every change, so a stale copy never overwrites a newer one in D1. */
  version: number;
}

/** One spend total of a chain: its priced (or unpriced) model calls of one day, vendor, model and price table. */
export interface SpendTotal {
  day: string;
  vendor: string;
  model: string;
  /** Empty for unpriced calls. */
  priceVersion: string;
  calls: number;
  unpricedCalls: number;
  microusd: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

/** The answer to an ingest part: the wire ack, the summary for D1, and the spend totals the part changed. */
export interface ChainIngestResult {
  ack: ChainAck;
  summary: ChainSummary;
  spend: SpendTotal[];
  /** The chain's whole priced spend of each UTC day the part added to. */
  spendDays: { day: string; microusd: number }[];
}

/** A page of stored frames. */
export interface FramePage {
  frames: (Frame & { hash: string; received_ms: number })[];
  next: number | null;
}
