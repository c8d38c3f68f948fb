// The one append path the recorder and `oxagen agent backfill` share.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseLock, runIdFor, verifyChain } from "../../protocol/index.ts";
import { appendSteps } from "../../collector/recorder/append.ts";
import { makeBody } from "../../collector/recorder/bodies.ts";
import { Journal } from "../../collector/recorder/journal.ts";
import type { Step } from "../../collector/recorder/mapper.ts";
import { HOST_SECRET } from "../support/sample-run.ts";

const key = { secretKey: HOST_SECRET, hostId: "h-append-1" };
const RUN1 = runIdFor("h-append-1", "custom-agent", "s1");
const RUN2 = runIdFor("h-append-1", "custom-agent", "s2");
const gap = (detail: string): Step => ({ kind: "telemetry_gap", payload: { path: "recorder", cause: "other", detail }, bodies: [] });

describe("appendSteps", () => {
  it("is all or nothing: a refused step leaves the writer, the journal and the ids as they were", () => {
    const dir = mkdtempSync(join(tmpdir(), "oxagen-append-"));
    const journal = new Journal(dir);
    const rec = journal.open(RUN1, { harness: "custom", agent: null, session_id: "s1" });
    appendSteps(journal, rec, [gap("first")], { t: 10, lock: false, final: false, key });
    const before = rec.writer.state;
    const file = readFileSync(join(dir, `${RUN1}.jsonl`), "utf8");
    const huge: Step = { kind: "telemetry_gap", payload: { path: "recorder", cause: "other", detail: "x".repeat(70_000) }, bodies: [] };
    expect(() => appendSteps(journal, rec, [gap("second"), huge], { t: 20, lock: true, final: true, key, id: "ev-1" })).toThrow();
    expect(rec.writer.state).toEqual(before);
    expect(readFileSync(join(dir, `${RUN1}.jsonl`), "utf8")).toBe(file);
    expect(journal.has("ev-1")).toBe(false);
    appendSteps(journal, rec, [gap("second")], { t: 20, lock: false, final: false, key, id: "ev-1" });
    expect(rec.frames.map((f) => f.seq)).toEqual([0, 1]);
    expect(journal.has("ev-1")).toBe(true);
    journal.close();
  });

  it("keeps time from going back, stores bodies once, locks at the later of the last frame and lockT", () => {
    const dir = mkdtempSync(join(tmpdir(), "oxagen-append-"));
    const journal = new Journal(dir);
    const rec = journal.open(RUN2, { harness: "custom", agent: null, session_id: "s2" });
    const body = makeBody("prompt", "fix the failing test", null);
    const prompt: Step = { kind: "turn_start", payload: { path: "backfill", prompt: body.digest, bodies: [body.ref] }, bodies: [body] };
    const frames = appendSteps(
      journal,
      rec,
      [
        { ...gap("a"), t: 500 },
        { ...prompt, t: 300 },
        { ...gap("b"), t: 900 },
      ],
      {
        t: 0,
        lock: true,
        final: true,
        key,
        lockT: 5_000,
      },
    );
    expect(frames.map((f) => f.t)).toEqual([500, 500, 900]);
    expect(verifyChain(RUN2, frames).problems).toEqual([]);
    expect(rec.locks.map(parseLock)).toEqual([expect.objectContaining({ final: true, count: 3, t: 5_000 })]);
    expect(rec.bodies).toEqual([{ sha: body.ref.sha256, role: "prompt", seq: 1 }]);
    expect(journal.body(body.ref.sha256)?.toString()).toBe("fix the failing test");
    journal.close();
  });
});
