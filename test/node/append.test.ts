// The one append path the recorder and `oxagen agent backfill` share.
import { spawnSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseLock, runIdFor, verifyChain } from "../../protocol/index.ts";
import { appendSteps } from "../../collector/recorder/append.ts";
import { makeBody } from "../../collector/recorder/bodies.ts";
import { BodyStore } from "../../collector/recorder/journal/body-store.ts";
import { Journal, MAX_DEFERRED } from "../../collector/recorder/journal/index.ts";
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

// The gateway's calls: the client has its answer already, so the entry is durable by a group commit
// just after (docs/collector.md, "The journal"), while its place in the chain and its id are taken at once.
describe("appendSteps, deferred (the gateway)", () => {
  const RUN3 = runIdFor("h-append-1", "custom-agent", "s3");
  // The entries' lines (a deferred entry's bodies travel in body lines just before its own).
  const lines = (dir: string, chain: string) =>
    readFileSync(join(dir, `${chain}.jsonl`), "utf8")
      .split("\n")
      .filter((l) => l && !l.startsWith('{"k":"body"'));
  const bodyLines = (dir: string, chain: string) =>
    readFileSync(join(dir, `${chain}.jsonl`), "utf8")
      .split("\n")
      .filter((l) => l.startsWith('{"k":"body"'))
      .map((l) => Buffer.from((JSON.parse(l) as { b64: string }).b64, "base64").toString());
  const call = (text: string): Step => {
    const body = makeBody("llm_response", text, null);
    return { kind: "turn_start", payload: { path: "gateway", prompt: body.digest, bodies: [body.ref] }, bodies: [body] };
  };

  it("takes the chain's place and the id at once; nothing ships, no body or line is on disk until the group commit; then all of it, once", async () => {
    const dir = mkdtempSync(join(tmpdir(), "oxagen-append-"));
    const journal = new Journal(dir);
    let durable = 0;
    journal.onDurable = () => durable++;
    const rec = journal.open(RUN3, { harness: "custom", agent: null, session_id: "s3" });
    appendSteps(journal, rec, [gap("hook")], { t: 10, lock: false, final: false, key, id: "hook-1" });
    const a = call("first answer");
    const b = call("second answer");
    appendSteps(journal, rec, [a], { t: 20, lock: false, final: false, key, id: "gw-1", defer: true });
    appendSteps(journal, rec, [b], { t: 30, lock: false, final: false, key, id: "gw-2", defer: true });
    // Seen by the dedupe (a transcript reader, a repeated id) before it is durable.
    expect([journal.has("gw-1"), journal.has("gw-2")]).toEqual([true, true]);
    expect(rec.writer.state.count).toBe(3);
    // Not shipped, not in the record the shipper reads, not on disk yet.
    expect(rec.frames.map((f) => f.seq)).toEqual([0]);
    expect(rec.bodies).toEqual([]);
    expect(lines(dir, RUN3)).toHaveLength(2);
    expect(journal.body(a.bodies[0]!.ref.sha256)).toBeNull();
    await journal.settled();
    expect(durable).toBeGreaterThan(0);
    expect(rec.frames.map((f) => f.seq)).toEqual([0, 1, 2]);
    expect(rec.bodies.map((x) => x.seq)).toEqual([1, 2]);
    expect(lines(dir, RUN3)).toHaveLength(4);
    // The bodies were made durable in the same write and fsync as their lines, no file and fsync each.
    expect(bodyLines(dir, RUN3)).toEqual(["first answer", "second answer"]);
    expect(journal.body(b.bodies[0]!.ref.sha256)?.toString()).toBe("second answer");
    expect(verifyChain(RUN3, rec.frames).problems).toEqual([]);
    journal.close();
    // Read back after a restart: the same chain, frames and ids.
    const again = new Journal(dir);
    const back = again.chains.get(RUN3)!;
    expect(back.writer.state).toEqual(rec.writer.state);
    expect(back.frames).toEqual(rec.frames);
    expect(again.has("gw-2")).toBe(true);
    again.close();
  });

  it("a body its file lost after the group commit (a crash before the file reached the disk) comes back from its line at the next start, also after a compaction", async () => {
    const dir = mkdtempSync(join(tmpdir(), "oxagen-append-"));
    const journal = new Journal(dir);
    const rec = journal.open(RUN3, { harness: "custom", agent: null, session_id: "s3" });
    const a = call("a body to keep");
    appendSteps(journal, rec, [a], { t: 20, lock: false, final: false, key, id: "gw-1", defer: true });
    await journal.settled();
    const sha = a.bodies[0]!.ref.sha256;
    // Compacted while the body waits to ship: the snapshot is followed by its line, no fsync'd file needed.
    journal.compact(rec);
    expect(bodyLines(dir, RUN3)).toEqual(["a body to keep"]);
    journal.close();
    // The file written at stop without an fsync of its own: gone, or torn, after a power cut.
    writeFileSync(join(dir, "bodies", sha), "torn");
    const again = new Journal(dir);
    expect(again.body(sha)?.toString()).toBe("a body to keep");
    expect(again.chains.get(RUN3)!.bodies.map((b) => b.sha)).toEqual([sha]);
    again.close();
  });

  it("a synchronous append after it (a hook, a lock) writes the deferred lines and bodies first, in chain order; the group commit under way adds nothing twice", async () => {
    const dir = mkdtempSync(join(tmpdir(), "oxagen-append-"));
    const journal = new Journal(dir);
    const rec = journal.open(RUN3, { harness: "custom", agent: null, session_id: "s3" });
    const a = call("carried");
    appendSteps(journal, rec, [a], { t: 20, lock: false, final: false, key, id: "gw-1", defer: true });
    // A lock on the spot (the periodic lock, or a hook's final lock): it may only cover durable frames.
    appendSteps(journal, rec, [gap("stop")], { t: 30, lock: true, final: true, key, id: "hook-2" });
    expect(rec.frames.map((f) => f.seq)).toEqual([0, 1]);
    expect(rec.locks.map(parseLock)).toEqual([expect.objectContaining({ final: true, count: 2 })]);
    expect(lines(dir, RUN3).map((l) => (JSON.parse(l) as { k: string; id?: string }).id ?? "open")).toEqual(["open", "gw-1", "hook-2"]);
    expect(journal.body(a.bodies[0]!.ref.sha256)?.toString()).toBe("carried");
    await journal.settled();
    expect(lines(dir, RUN3)).toHaveLength(3);
    expect(rec.frames.map((f) => f.seq)).toEqual([0, 1]);
    journal.close();
    const again = new Journal(dir);
    expect(again.chains.get(RUN3)!.frames).toEqual(rec.frames);
    expect(again.chains.get(RUN3)!.writer.state.final).toBe(true);
    again.close();
  });

  it("an ack while gateway entries wait goes in their group commit, after them: nothing is written on the spot, and a restart reads the ack", async () => {
    const dir = mkdtempSync(join(tmpdir(), "oxagen-append-"));
    const journal = new Journal(dir);
    const rec = journal.open(RUN3, { harness: "custom", agent: null, session_id: "s3" });
    appendSteps(journal, rec, [gap("hook")], { t: 10, lock: false, final: false, key, id: "hook-1" });
    const onDisk = readFileSync(join(dir, `${RUN3}.jsonl`), "utf8");
    appendSteps(journal, rec, [call("carried")], { t: 20, lock: false, final: false, key, id: "gw-1", defer: true });
    // The server acknowledged the hook's frame: the ack joins the waiting entry's commit (written now,
    // it would write and fsync the waiting entry on the event loop).
    journal.ack(rec, 1, [], []);
    expect(rec.stored).toBe(1);
    expect(readFileSync(join(dir, `${RUN3}.jsonl`), "utf8")).toBe(onDisk);
    await journal.settled();
    expect(lines(dir, RUN3).map((l) => (JSON.parse(l) as { k: string; id?: string }).id ?? (JSON.parse(l) as { k: string }).k)).toEqual([
      "open",
      "hook-1",
      "gw-1",
      "ack",
    ]);
    expect(rec.frames.map((f) => f.seq)).toEqual([1]);
    journal.close();
    const again = new Journal(dir);
    const back = again.chains.get(RUN3)!;
    expect([back.stored, back.frames.map((f) => f.seq), again.has("gw-1")]).toEqual([1, [1], true]);
    again.close();
  });

  it("a chain holds at most MAX_DEFERRED entries waiting: the next one is written at once, with all those before it", () => {
    const dir = mkdtempSync(join(tmpdir(), "oxagen-append-"));
    const journal = new Journal(dir);
    const rec = journal.open(RUN3, { harness: "custom", agent: null, session_id: "s3" });
    for (let i = 0; i < MAX_DEFERRED; i++)
      appendSteps(journal, rec, [gap(`call ${i}`)], { t: 20, lock: false, final: false, key, defer: true });
    expect(rec.deferred).toHaveLength(MAX_DEFERRED);
    expect(lines(dir, RUN3)).toHaveLength(1);
    appendSteps(journal, rec, [call("one more")], { t: 20, lock: false, final: false, key, id: "gw-last", defer: true });
    expect(rec.deferred).toEqual([]);
    expect(rec.frames).toHaveLength(MAX_DEFERRED + 1);
    expect(lines(dir, RUN3)).toHaveLength(MAX_DEFERRED + 2);
    expect(journal.body(rec.bodies[0]!.sha)?.toString()).toBe("one more");
    journal.close();
  });

  it("a body a waiting entry names is kept while its group commit writes the line: an ack of the same body elsewhere, a compaction", async () => {
    const dir = mkdtempSync(join(tmpdir(), "oxagen-append-"));
    const journal = new Journal(dir);
    const a = journal.open(RUN3, { harness: "custom", agent: null, session_id: "s3" });
    const b = journal.open(RUN2, { harness: "custom", agent: null, session_id: "s2" });
    // The same bytes on two chains (a system prompt sent by two sessions): one body file.
    appendSteps(journal, a, [call("the same request")], { t: 10, lock: false, final: false, key, id: "hook-a" });
    const sha = a.bodies[0]!.sha;
    appendSteps(journal, b, [call("the same request")], { t: 20, lock: false, final: false, key, id: "gw-b", defer: true });
    // The group commit (queued first) found the body on disk and is writing B's line on the threadpool.
    await new Promise((r) => setImmediate(r));
    expect([b.flushing, b.deferred.length]).toEqual([true, 1]);
    journal.ack(a, 1, [], [sha]);
    journal.compact(a);
    await journal.settled();
    expect(b.bodies.map((x) => x.sha)).toEqual([sha]);
    expect(journal.body(sha)?.toString()).toBe("the same request");
    journal.close();
  });

  it("at close, a chain that cannot be written is reported and every other chain's waiting entries are written", () => {
    const dir = mkdtempSync(join(tmpdir(), "oxagen-append-"));
    const journal = new Journal(dir);
    const errors: string[] = [];
    journal.onError = (err) => errors.push(err.message);
    const a = journal.open(RUN3, { harness: "custom", agent: null, session_id: "s3" });
    const b = journal.open(RUN2, { harness: "custom", agent: null, session_id: "s2" });
    appendSteps(journal, a, [call("on a")], { t: 20, lock: false, final: false, key, id: "gw-a", defer: true });
    appendSteps(journal, b, [call("on b")], { t: 20, lock: false, final: false, key, id: "gw-b", defer: true });
    // A's file can no longer be written (a disk gone read-only, say).
    const fd = a.fd;
    a.fd = openSync(join(dir, `${RUN3}.jsonl`), "r");
    journal.close();
    closeSync(fd);
    const again = new Journal(dir);
    expect([again.has("gw-a"), again.has("gw-b")]).toEqual([false, true]);
    expect(again.body(again.chains.get(RUN2)!.bodies[0]!.sha)?.toString()).toBe("on b");
    again.close();
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain(RUN3);
    expect(errors[0]).toContain("1 gateway entry");
  });

  it("an entry recorded after close is written at once, not left waiting for a group commit that never comes", async () => {
    const dir = mkdtempSync(join(tmpdir(), "oxagen-append-"));
    const journal = new Journal(dir);
    const rec = journal.open(RUN3, { harness: "custom", agent: null, session_id: "s3" });
    appendSteps(journal, rec, [gap("hook")], { t: 10, lock: false, final: false, key, id: "hook-1" });
    journal.close();
    // A call that ended while the recorder stopped.
    appendSteps(journal, rec, [call("late")], { t: 20, lock: false, final: false, key, id: "gw-late", defer: true });
    appendSteps(journal, rec, [gap("later still")], { t: 30, lock: false, final: false, key, id: "hook-2" });
    expect(rec.deferred).toEqual([]);
    expect(rec.frames.map((f) => f.seq)).toEqual([0, 1, 2]);
    await journal.settled();
    const again = new Journal(dir);
    const back = again.chains.get(RUN3)!;
    expect([again.has("gw-late"), again.has("hook-2")]).toEqual([true, true]);
    expect(back.frames).toEqual(rec.frames);
    expect(again.body(back.bodies[0]!.sha)?.toString()).toBe("late");
    expect(verifyChain(RUN3, back.frames).problems).toEqual([]);
    again.close();
    // A run first seen after close: its file is opened, written and closed again.
    const late = journal.open(RUN2, { harness: "custom", agent: null, session_id: "s2" });
    appendSteps(journal, late, [call("late too")], { t: 40, lock: false, final: false, key, id: "gw-new", defer: true });
    expect(late.fd).toBe(-1);
    const third = new Journal(dir);
    expect(third.has("gw-new")).toBe(true);
    third.close();
  });

  it("a lock is never deferred", () => {
    const dir = mkdtempSync(join(tmpdir(), "oxagen-append-"));
    const journal = new Journal(dir);
    const rec = journal.open(RUN3, { harness: "custom", agent: null, session_id: "s3" });
    appendSteps(journal, rec, [gap("x")], { t: 20, lock: true, final: false, key, defer: true });
    expect(rec.deferred).toEqual([]);
    expect(rec.locks).toHaveLength(1);
    expect(lines(dir, RUN3)).toHaveLength(2);
    journal.close();
  });

  // A recorder killed (kill -9) between a gateway call's answer and its group commit. The child
  // appends a hook's entry (durable), then a carried call (deferred), then kills itself before the
  // event loop turns, or once the group commit is done.
  const killed = (settle: boolean) => {
    const dir = mkdtempSync(join(tmpdir(), "oxagen-append-"));
    const root = join(import.meta.dirname, "../..");
    const script = join(dir, "crash.ts");
    writeFileSync(
      script,
      `import { appendSteps } from ${JSON.stringify(join(root, "collector/recorder/append.ts"))};
import { makeBody } from ${JSON.stringify(join(root, "collector/recorder/bodies.ts"))};
import { Journal } from ${JSON.stringify(join(root, "collector/recorder/journal/index.ts"))};
import { HOST_SECRET } from ${JSON.stringify(join(root, "test/support/sample-run.ts"))};
const key = { secretKey: HOST_SECRET, hostId: "h-append-1" };
const journal = new Journal(${JSON.stringify(join(dir, "journal"))});
const rec = journal.open(${JSON.stringify(RUN3)}, { harness: "custom", agent: null, session_id: "s3" });
appendSteps(journal, rec, [{ kind: "telemetry_gap", payload: { path: "recorder", cause: "other", detail: "hook" }, bodies: [] }], { t: 10, lock: false, final: false, key, id: "hook-1" });
const body = makeBody("llm_response", "the carried call's answer", null);
appendSteps(journal, rec, [{ kind: "turn_start", payload: { path: "gateway", prompt: body.digest, bodies: [body.ref] }, bodies: [body] }], { t: 20, lock: false, final: false, key, id: "gw-1", defer: true });
${settle ? "await journal.settled();" : ""}
process.kill(process.pid, "SIGKILL");
`,
    );
    const r = spawnSync(process.execPath, [script], { encoding: "utf8" });
    expect(r.signal).toBe("SIGKILL");
    return join(dir, "journal");
  };

  it("kill -9 before the group commit: the call's frame and body are lost, nothing half-written; the chain on disk verifies and goes on", () => {
    const dir = killed(false);
    const journal = new Journal(dir);
    const rec = journal.chains.get(RUN3)!;
    // The hook's entry was durable before its answer; the carried call is the window's loss (the
    // transcript reader records it from the harness's own log, its gateway id being absent).
    expect([journal.has("hook-1"), journal.has("gw-1")]).toEqual([true, false]);
    expect(rec.frames.map((f) => f.seq)).toEqual([0]);
    expect(rec.bodies).toEqual([]);
    expect(readdirSync(join(dir, "bodies"))).toEqual([]);
    appendSteps(journal, rec, [gap("after the restart")], { t: 30, lock: true, final: false, key, id: "hook-3" });
    expect(verifyChain(RUN3, rec.frames).problems).toEqual([]);
    expect(rec.locks.map(parseLock)).toEqual([expect.objectContaining({ count: 2 })]);
    journal.close();
  });

  it("kill -9 after the group commit: the call is on disk with its body", () => {
    const dir = killed(true);
    const journal = new Journal(dir);
    const rec = journal.chains.get(RUN3)!;
    expect([journal.has("hook-1"), journal.has("gw-1")]).toEqual([true, true]);
    expect(rec.frames.map((f) => f.seq)).toEqual([0, 1]);
    expect(journal.body(rec.bodies[0]!.sha)?.toString()).toBe("the carried call's answer");
    expect(verifyChain(RUN3, rec.frames).problems).toEqual([]);
    journal.close();
  });
});

describe("a body line (BodyStore.line)", () => {
  it("is the JSON of { k, sha, b64 } of exactly the body's bytes, also for bytes that are a view into a larger buffer", () => {
    const whole = Buffer.from('xxxx{"say":"é \\u2028 ok"}yyyy');
    const bytes = whole.subarray(4, whole.length - 4);
    const sha = "ab".repeat(32);
    const line = BodyStore.line({ sha, bytes });
    expect(line).toBe(`${JSON.stringify({ k: "body", sha, b64: bytes.toString("base64") })}\n`);
    expect(Buffer.from((JSON.parse(line) as { b64: string }).b64, "base64").equals(bytes)).toBe(true);
    expect(/^[\x20-\x7e]*\n$/.test(line)).toBe(true);
  });
});
