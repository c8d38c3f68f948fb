import { describe, expect, it } from "vitest";
import {
  appendFrame,
  bytesToHex,
  ChainWriter,
  emptyHead,
  frameHash,
  frameSchemaProblem,
  genesisHash,
  payloadHash,
  verifyChain,
  FRAME_KINDS,
  PAYLOADS,
} from "../../protocol/index.ts";
import chainVectors from "../vectors/chain.json";

describe("frame hashing known answers (test/vectors/chain.json)", () => {
  it("reproduces the genesis, payload and frame hashes", () => {
    expect(bytesToHex(genesisHash(chainVectors.chain))).toBe(chainVectors.genesis);
    let prev = genesisHash(chainVectors.chain);
    for (const f of chainVectors.frames) {
      expect(bytesToHex(payloadHash(f.payload))).toBe(f.payload_hash);
      const hash = frameHash(chainVectors.chain, f, prev);
      expect(bytesToHex(hash)).toBe(f.hash);
      prev = hash;
    }
  });

  it("binds the first frame to its chain: the same frame on another chain hashes differently", () => {
    const f = chainVectors.frames[0]!;
    const other = "run_00000000000000000000000000000000";
    expect(bytesToHex(frameHash(other, f, genesisHash(other)))).not.toBe(f.hash);
  });
});

describe("appendFrame and verifyChain", () => {
  const chain = chainVectors.chain;

  it("refuses a seq that is not next", () => {
    const head = emptyHead(chain);
    expect(() => appendFrame(head, { seq: 1, t: 1, kind: "agent_start", payload: "{}" })).toThrow(/expected seq 0/);
  });

  it("finds nothing wrong with the vector chain", () => {
    const { problems, hashes } = verifyChain(chain, chainVectors.frames);
    expect(problems).toEqual([]);
    expect(bytesToHex(hashes.at(-1)!)).toBe(chainVectors.frames.at(-1)!.hash);
  });

  it("names the one edited frame and only it", () => {
    const frames = chainVectors.frames.map((f) => ({ ...f }));
    frames[4] = { ...frames[4]!, payload: frames[4]!.payload.replace("run_shell", "run_shelL") };
    const { problems } = verifyChain(chain, frames);
    expect(problems).toEqual([{ seq: 4, code: "FRAME_HASH_MISMATCH", message: expect.any(String) }]);
  });

  it("reports gaps, duplicates and time going back", () => {
    const frames = chainVectors.frames.map((f) => ({ ...f }));
    const dup = [frames[0]!, frames[0]!, ...frames.slice(1)];
    expect(verifyChain(chain, dup).problems.map((p) => p.code)).toContain("SEQ_DUPLICATE");
    const gap = [frames[0]!, ...frames.slice(2)];
    expect(verifyChain(chain, gap).problems.map((p) => p.code)).toContain("SEQ_GAP");
    const back = frames.map((f, i) => (i === 3 ? { ...f, t: 1 } : f));
    expect(verifyChain(chain, back).problems.map((p) => p.code)).toContain("TIME_REGRESSION");
  });
});

describe("frame kinds", () => {
  it("has a schema for every kind the coverage statement names", () => {
    expect(FRAME_KINDS.sort()).toEqual(
      [
        "agent_start", "turn_start", "policy_decision", "tool_requested", "token_denied", "approval_request",
        "harness_permission", "tool_call", "command", "file_io", "network", "turn_end", "subagent_start",
        "subagent_stop", "agent_stop", "llm_call", "error", "telemetry_gap", "oxagen:worktree_reconciled",
      ].sort(),
    );
    for (const kind of FRAME_KINDS) expect(PAYLOADS[kind]).toBeDefined();
  });

  it("refuses text where a frame holds hashes, and unknown fields", () => {
    const w = new ChainWriter(chainVectors.chain);
    expect(() => w.append("turn_start", { path: "hook", prompt: "fix it" } as never, 1)).toThrow();
    expect(() => w.append("turn_start", { path: "hook", prompt: { sha256: "a".repeat(64), size: 3 }, text: "fix it" } as never, 1)).toThrow();
    expect(frameSchemaProblem({ seq: 0, t: 1, kind: "agent_start", payload: '{"path":"hook"}' })).toMatch(/harness/);
    expect(frameSchemaProblem({ seq: 0, t: 1, kind: "bogus", payload: "{}" })).toMatch(/unknown frame kind/);
  });

  it("refuses to write a payload the server would refuse for its size", () => {
    const w = new ChainWriter(chainVectors.chain);
    const changed = Array.from({ length: 1000 }, (_, i) => ({ file: `${"d/".repeat(40)}f${i}.txt`, status: "added" as const }));
    expect(() => w.append("oxagen:worktree_reconciled", { path: "worktree", root: "/r", changed, commits: [] }, 1)).toThrow(/over 65536/);
    expect(w.state.count).toBe(0);
  });

  it("marks a backfilled frame and keeps the recording path", () => {
    const w = new ChainWriter(chainVectors.chain);
    const { frame } = w.append("agent_start", { path: "backfill", backfilled: true, harness: "claude-code", session_id: "s" }, 1);
    expect(JSON.parse(frame.payload)).toMatchObject({ path: "backfill", backfilled: true });
  });
});

describe("hashing long and non-ASCII payloads", () => {
  it.each([21_839, 21_840, 40_000, 65_536])("hashes a %i-character payload as the plain definition does", async (n) => {
    const { concatBytes, sha256, utf8, u16, u64 } = await import("../../protocol/index.ts");
    const payload = JSON.stringify({ path: "hook", x: "é".repeat(Math.max(0, n - 22)) }).slice(0, n);
    const chain = chainVectors.chain;
    const prev = genesisHash(chain);
    const tag = (t: string) => concatBytes(utf8(t), Uint8Array.of(0));
    const ph = sha256(concatBytes(tag("oxagen/payload/v1"), utf8(payload)));
    const id = utf8(chain);
    const kind = utf8("agent_start");
    const expected = sha256(concatBytes(tag("oxagen/frame/v1"), u16(id.length), id, u64(0), prev, u64(5), Uint8Array.of(kind.length), kind, ph));
    expect(bytesToHex(payloadHash(payload))).toBe(bytesToHex(ph));
    expect(bytesToHex(frameHash(chain, { seq: 0, t: 5, kind: "agent_start", payload }, prev))).toBe(bytesToHex(expected));
  });
});
