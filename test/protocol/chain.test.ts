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
  addTally,
  bodyMentions,
  chainGaps,
  checkFrame,
  checkFrameLines,
  checkFrames,
  coverageFacts,
  emptyTally,
  frameLine,
  FrameProblems,
  fromHex,
  hashFrames,
  tallyCoverage,
  tallyGaps,
  utf8,
} from "../../protocol/index.ts";
import chainVectors from "../vectors/chain.json";
import { sampleRun } from "../support/sample-run.ts";

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
        "agent_start",
        "turn_start",
        "policy_decision",
        "tool_requested",
        "token_denied",
        "approval_request",
        "harness_permission",
        "tool_call",
        "command",
        "file_io",
        "network",
        "turn_end",
        "subagent_start",
        "subagent_stop",
        "agent_stop",
        "llm_call",
        "error",
        "telemetry_gap",
        "oxagen:worktree_reconciled",
      ].sort(),
    );
    for (const kind of FRAME_KINDS) expect(PAYLOADS[kind]).toBeDefined();
  });

  it("refuses text where a frame holds hashes, and unknown fields", () => {
    const w = new ChainWriter(chainVectors.chain);
    expect(() => w.append("turn_start", { path: "hook", prompt: "fix it" } as never, 1)).toThrow();
    expect(() =>
      w.append("turn_start", { path: "hook", prompt: { sha256: "a".repeat(64), size: 3 }, text: "fix it" } as never, 1),
    ).toThrow();
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
    const expected = sha256(
      concatBytes(tag("oxagen/frame/v1"), u16(id.length), id, u64(0), prev, u64(5), Uint8Array.of(kind.length), kind, ph),
    );
    expect(bytesToHex(payloadHash(payload))).toBe(bytesToHex(ph));
    expect(bytesToHex(frameHash(chain, { seq: 0, t: 5, kind: "agent_start", payload }, prev))).toBe(bytesToHex(expected));
  });
});

describe("checking frames in chunks, as objects and as bundle lines", () => {
  const run = sampleRun({ lockEvery: 10, extraToolCalls: 60 });
  const chain = run.manifest.run.id;
  const frames = run.manifest.frames.map((f) => ({ ...f }));
  // One frame with a payload that is not Record JSON, one with an edited claimed hash, one edited
  // payload (its own hash no longer matches), and a telemetry gap and an over-limit body to tally.
  frames[5] = { ...frames[5]!, payload: frames[5]!.payload.replace(/^\{/, "{ ") };
  frames[17] = { ...frames[17]!, hash: "0".repeat(64) };
  frames[40] = { ...frames[40]!, payload: frames[40]!.payload.replace("hook", "hooc") };
  const gap = { path: "recorder", cause: "daemon_down", from_ms: 1, to_ms: 2 };
  frames[60] = { ...frames[60]!, kind: "telemetry_gap", payload: JSON.stringify(gap) };
  const over = { role: "tool_output", sha256: "ab".repeat(32), size: 2_000_000, kept: false, why: "over_limit" };
  frames[70] = { ...frames[70]!, payload: frames[70]!.payload.replace(/\}$/, `,"bodies":[${JSON.stringify(over)}]}`) };
  frames[80] = { ...frames[80]!, t: 5 };
  const whole = checkFrames(chain, frames, 0, frames.length, true);
  const text = frames.map((f) => `${frameLine(f)}\n`).join("");
  const bytes = utf8(text);
  const lineStart = (index: number) => utf8(text.split("\n").slice(0, index).join("\n")).length + (index > 0 ? 1 : 0);
  const lines = (from: number, to: number) =>
    checkFrameLines(bytes, lineStart(from), lineStart(to), {
      chainId: chain,
      from,
      prev: from === 0 ? genesisHash(chain) : fromHex(frames[from - 1]!.hash, 32),
      bodies: true,
    });

  // An edited claimed hash breaks its own frame and the next, which it links.
  it("finds each problem at its frame, and the claimed hash links the next frame", () => {
    expect(whole.invalid.map(([i]) => i)).toEqual([5]);
    expect(whole.mismatched.map(([i]) => i)).toEqual([5, 17, 18, 40, 60, 70, 80]);
    expect(whole.mismatched.find(([i]) => i === 17)![1]).toBe(run.manifest.frames[17]!.hash);
    const hashes = hashFrames(chain, frames);
    for (const [i, hex] of whole.mismatched) expect(bytesToHex(hashes[i]!)).toBe(hex);
    expect(new FrameProblems().add(whole).map((p) => `${p.code} ${p.seq}`)).toEqual(
      verifyChain(chain, frames).problems.map((p) => `${p.code} ${p.seq}`),
    );
  });

  it("checks frame lines of a bundle as it checks frames held as objects", () => {
    expect(lines(0, frames.length)).toEqual(whole);
  });

  it("gives the same problems and tally in any chunks, taken in order", () => {
    for (const cuts of [[1], [5, 6], [17, 18, 40], [3, 33, 63, 64], [80, 81], [frames.length - 1]]) {
      const bounds = [0, ...cuts, frames.length];
      for (const check of [(a: number, b: number) => checkFrames(chain, frames, a, b, true), lines]) {
        const chunks = bounds.slice(1).map((to, k) => check(bounds[k]!, to));
        const problems = new FrameProblems();
        const tally = emptyTally();
        expect(chunks.flatMap((c) => problems.add(c))).toEqual(new FrameProblems().add(whole));
        for (const c of chunks) addTally(tally, c.tally);
        expect(tally).toEqual(whole.tally);
        expect(chunks.flatMap((c) => c.kept)).toEqual(whole.kept);
      }
    }
    expect(() => new FrameProblems().add(checkFrames(chain, frames, 3, 9))).toThrow(/expected the chunk from frame 0/);
  });

  it("tallies what coverageFacts and chainGaps count", () => {
    const payloads = frames.map((f) => checkFrame(f).payload);
    const kinds = frames.map((f) => f.kind);
    expect(tallyCoverage(whole.tally)).toEqual(coverageFacts(kinds, payloads));
    expect(tallyGaps(whole.tally)).toEqual(chainGaps(kinds, payloads));
    expect(tallyGaps(whole.tally).map((g) => g.kind)).toEqual(["daemon_down", "missing_bodies"]);
    expect(whole.kept).toEqual(bodyMentions(payloads).filter((m) => m.kept));
  });

  it("stops a chunk of lines at the first line not in the frame layout", () => {
    const bad = utf8(text.replace('{"seq":30,', '{"seq": 30,'));
    const chunk = checkFrameLines(bad, 0, bad.length, { chainId: chain, from: 0, prev: genesisHash(chain), bodies: false });
    expect(chunk.malformed).toEqual({ index: 30, message: "seq is not a non-negative integer", unreadable: false });
    expect(chunk.to).toBe(30);
  });
});
