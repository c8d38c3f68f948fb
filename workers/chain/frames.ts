import { bodyMentions, bytesToHex, type ChainAck, type Frame, frameHash, fromHex, type ParsedPayload } from "../../protocol/index.ts";
import type { ChainState } from "./state.ts";

/** Frame flag: the frame may carry one of the chain's own gaps (a `telemetry_gap`, an `agent_stop`, a body not kept). */
export const FLAG_GAPS = 1;
/** Frame flag: the payload names a kept body (see `bodies.ts`). */
export const FLAG_KEPT_BODIES = 2;
/** Frame flag: an `llm_call` the gateway recorded (the `gateway` tier needs one under a host lock). */
export const FLAG_GATEWAY_CALL = 4;
const MAX_MISSING_RANGES = 100;

/** A frame as the `frames` and `held` tables hold it. */
export interface FrameRow extends Record<string, SqlStorageValue> {
  seq: number;
  t: number;
  kind: string;
  payload: string;
}

/** What the frame intake needs from the object: its SQL, and what it does with a frame it appends or a conflicting one. */
export interface FrameStore {
  sql: SqlStorage;
  /** Called for each frame appended, in seq order, after it is stored. */
  appended(frame: Frame, payload: ParsedPayload): void;
  /** Keeps a second, different frame at a seq as evidence, with its gap; true when that is news. */
  equivocate(frame: Frame): boolean;
}

/** What a part's frames did: the new head, whether anything changed, and the seqs refused after a final lock. */
export interface FrameIntake {
  head: Uint8Array;
  changed: boolean;
  appended: number;
  refused: number[];
}

/**
 * Takes a part's frames in seq order: the next frame is appended (and every held frame it lets
 * follow), a later one is held until the hole fills, a stored or held one again is a duplicate
 * when it is the same and equivocation when it is not. Frames after a final lock are refused.
 */
export function takeFrames(store: FrameStore, st: ChainState, frames: readonly Frame[], now: number, ack: ChainAck): FrameIntake {
  const sql = store.sql;
  const intake: FrameIntake = { head: fromHex(st.head, 32), changed: false, appended: 0, refused: [] };
  const append = (frame: Frame) => {
    const hash = frameHash(st.chain, frame, intake.head);
    const payload = JSON.parse(frame.payload) as ParsedPayload;
    sql.exec(
      "INSERT INTO frames (seq, t, kind, payload, hash, received_ms, flags) VALUES (?, ?, ?, ?, ?, ?, ?)",
      frame.seq,
      frame.t,
      frame.kind,
      frame.payload,
      bytesToHex(hash),
      now,
      flagsOf(frame.kind, payload),
    );
    intake.head = hash;
    intake.appended++;
    st.count++;
    store.appended(frame, payload);
  };
  const conflict = (frame: Frame) => {
    ack.conflicts.push(frame.seq);
    intake.changed = store.equivocate(frame) || intake.changed;
  };
  let heldCount = sql.exec<{ n: number }>("SELECT count(*) AS n FROM held").one().n;
  for (const frame of [...frames].sort((a, b) => a.seq - b.seq)) {
    if (frame.seq < st.count) {
      const stored = sql.exec<FrameRow>("SELECT seq, t, kind, payload FROM frames WHERE seq = ?", frame.seq).one();
      if (sameFrame(stored, frame)) ack.duplicates.push(frame.seq);
      else conflict(frame);
    } else if (st.final) {
      intake.refused.push(frame.seq);
      // Still news from the computer: the session goes on (or ends) there, though the record is closed.
      st.lastReceivedMs = now;
      if (frame.kind === "agent_stop") st.hostStopped = true;
    } else if (frame.seq === st.count) {
      append(frame);
      // Most batches arrive in order: skip the lookup for a held successor when nothing is held.
      while (heldCount > 0) {
        const next = sql.exec<FrameRow>("SELECT seq, t, kind, payload FROM held WHERE seq = ?", st.count).toArray()[0];
        if (!next) break;
        sql.exec("DELETE FROM held WHERE seq = ?", next.seq);
        heldCount--;
        append(next);
      }
    } else {
      const held = sql.exec<FrameRow>("SELECT seq, t, kind, payload FROM held WHERE seq = ?", frame.seq).toArray()[0];
      if (!held) {
        sql.exec(
          "INSERT INTO held (seq, t, kind, payload, received_ms) VALUES (?, ?, ?, ?, ?)",
          frame.seq,
          frame.t,
          frame.kind,
          frame.payload,
          now,
        );
        heldCount++;
        intake.changed = true;
      } else if (sameFrame(held, frame)) ack.duplicates.push(frame.seq);
      else conflict(frame);
    }
  }
  return intake;
}

/** The seqs held beyond a hole and the [from, to] ranges still missing below the highest (at most 100 ranges). */
export function heldAndMissing(sql: SqlStorage, count: number): { held: number; missing: [number, number][] } {
  const held = sql
    .exec<{ seq: number }>("SELECT seq FROM held ORDER BY seq")
    .toArray()
    .map((r) => r.seq);
  const missing: [number, number][] = [];
  let next = count;
  for (const seq of held) {
    if (seq > next && missing.length < MAX_MISSING_RANGES) missing.push([next, seq - 1]);
    next = seq + 1;
  }
  return { held: held.length, missing };
}

function sameFrame(a: FrameRow, b: Frame): boolean {
  return a.t === b.t && a.kind === b.kind && a.payload === b.payload;
}

function flagsOf(kind: string, payload: ParsedPayload): number {
  let flags = kind === "telemetry_gap" || kind === "agent_stop" ? FLAG_GAPS : 0;
  const mentions = bodyMentions([payload]);
  if (mentions.some((m) => !m.kept)) flags |= FLAG_GAPS;
  if (mentions.some((m) => m.kept)) flags |= FLAG_KEPT_BODIES;
  if (kind === "llm_call" && payload.path === "gateway") flags |= FLAG_GATEWAY_CALL;
  return flags;
}
