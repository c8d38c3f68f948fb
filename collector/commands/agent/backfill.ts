import {
  closeSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { fromHex, ROUTES, runIdFor } from "../../../protocol/index.ts";
import { parse } from "../../lib/args.ts";
import { ExitError, UsageError } from "../../lib/errors.ts";
import { useNodeCrypto } from "../../lib/node-crypto.ts";
import { hostFetch } from "../../lib/server.ts";
import { readHost, statePath, type HostConfig } from "../../lib/state.ts";
import { appendSteps } from "../../recorder/append.ts";
import { Journal } from "../../recorder/journal/index.ts";
import { readPolicyFile } from "../../recorder/policy-cache.ts";
import { Shipper } from "../../recorder/shipper.ts";
import { Backfill, type SubagentInfo } from "../../recorder/sources/backfill.ts";
import { splitLines } from "../../recorder/sources/lines.ts";
import { SubagentFinder } from "../../recorder/sources/tail.ts";
import { progressBar } from "../verify/progress.ts";

const USAGE = "usage: oxagen agent backfill TRANSCRIPT [--json]";

async function serverHolds(host: HostConfig, run: string): Promise<"yes" | "no" | "unknown"> {
  try {
    const res = await hostFetch(host, ROUTES.hostRun(run), { timeoutMs: 10_000 });
    return res.status === 200 ? "yes" : res.status === 404 ? "no" : "unknown";
  } catch {
    return "unknown";
  }
}

function out(json: boolean, value: Record<string, unknown>, text: string): void {
  process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${text}\n`);
}

/** The lines of a file, read in chunks (read-only); a last line without its newline too. */
function* linesOf(path: string, progress?: (fraction: number) => void): Generator<string> {
  const size = statSync(path).size;
  const fd = openSync(path, "r");
  try {
    let at = 0;
    let carry = Buffer.alloc(0);
    const buf = Buffer.alloc(4 * 1024 * 1024);
    for (;;) {
      const got = readSync(fd, buf, 0, buf.length, at);
      if (got === 0) break;
      const chunk = Buffer.concat([carry, buf.subarray(0, got)]);
      const { lines, consumed } = splitLines(chunk, 0);
      for (const l of lines) yield l.text;
      carry = Buffer.from(chunk.subarray(consumed));
      at += got;
      progress?.(at / Math.max(1, size));
    }
    if (carry.toString().trim()) yield carry.toString();
  } finally {
    closeSync(fd);
  }
}

/** A subagent transcript's agent id (its file name) and type (2.1's `.meta.json` beside it). */
function subagentInfo(path: string): SubagentInfo {
  const agentId = basename(path, ".jsonl").replace(/^agent-/, "");
  try {
    const meta = JSON.parse(readFileSync(path.replace(/\.jsonl$/, ".meta.json"), "utf8")) as { agentType?: unknown };
    if (typeof meta.agentType === "string") return { agentId, agentType: meta.agentType };
  } catch {
    // 2.0 writes no meta file; a subagent without one still counts.
  }
  return { agentId };
}

/** Feeds the session's transcript, then its subagents' (compaction calls among them); returns how many subagent files. */
function readTranscript(path: string, b: Backfill): number {
  const bar = progressBar(process.stderr);
  for (const line of linesOf(path, (f) => bar.update(f))) b.line(line);
  bar.done();
  const subs = new SubagentFinder().find(path);
  for (const sub of subs) b.subagent(linesOf(sub), subagentInfo(sub));
  return subs.length;
}

/**
 * `oxagen agent backfill TRANSCRIPT`: rebuilds a finished Claude Code session into a run, final-
 * locked, and ships it. Refuses a session the journal already holds (it was recorded live, or
 * already backfilled). Built in a private journal, then kept in the recorder's journal so the run
 * is known to it and whatever the server has not acknowledged ships with the recorder's next start.
 */
export async function backfill(args: string[]): Promise<number> {
  const { values, positionals } = parse("oxagen agent backfill", args, { json: { type: "boolean" } });
  const json = values.json === true;
  if (positionals.length !== 1) throw new UsageError(USAGE);
  const path = positionals[0]!;
  const host = readHost();
  if (!host) throw new ExitError(1, "oxagen agent backfill: this computer is not enrolled; run tacho enroll first");
  if (!existsSync(path)) throw new ExitError(1, `oxagen agent backfill: ${path} does not exist`);
  useNodeCrypto();
  const policy = readPolicyFile(host);
  const b = new Backfill(policy?.policy.retention ?? null);
  const subagents = readTranscript(path, b);
  b.finish();
  if (!b.sessionId)
    throw new ExitError(1, `oxagen agent backfill: ${path} holds no Claude Code session (no user or assistant line with a sessionId)`);
  const run = runIdFor(host.host_id, "claude-code", b.sessionId);
  const mainDir = statePath("journal");
  if (existsSync(join(mainDir, `${run}.jsonl`))) {
    out(
      json,
      { ok: false, error: "already_recorded", run, session_id: b.sessionId },
      `oxagen agent backfill: session ${b.sessionId} is already recorded as run ${run} (live or by an earlier backfill); nothing was written`,
    );
    return 1;
  }
  // The journal forgets nothing it recorded, but a reinstalled collector starts with an empty one.
  const remote = await serverHolds(host, run);
  if (remote !== "no") {
    const [error, text] =
      remote === "yes"
        ? ["already_recorded", `the server already holds session ${b.sessionId} as run ${run}; nothing was written`]
        : [
            "server_unreachable",
            `cannot ask the server whether it already holds run ${run}; nothing was written (try again when it is reachable)`,
          ];
    out(json, { ok: false, error, run, session_id: b.sessionId }, `oxagen agent backfill: ${text}`);
    return 1;
  }
  const dir = mkdtempSync(join(tmpdir(), "oxagen-backfill-"));
  const journal = new Journal(dir);
  const rec = journal.open(run, { harness: "claude-code", agent: null, session_id: b.sessionId });
  const key = { secretKey: fromHex(host.secret_key, 32), hostId: host.host_id };
  const frames = appendSteps(journal, rec, b.steps, { t: 0, lock: true, final: true, key, lockT: Date.now() });
  const shipper = new Shipper(journal, host, { baseMs: 500, maxMs: 5000, delayMs: 0, log: () => {} });
  shipper.kick(0);
  const deadline = Date.now() + Number(process.env.OXAGEN_BACKFILL_SHIP_MS ?? 20_000);
  const pendingCount = () => Object.values(shipper.pending()).reduce((a, n) => a + n, 0);
  while (pendingCount() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  await shipper.stop();
  const pending = shipper.pending();
  journal.close();
  // Keep the run in the recorder's journal: it is then known (a second backfill is refused) and ships what is left.
  mkdirSync(join(mainDir, "bodies"), { recursive: true, mode: 0o700 });
  for (const name of readdirSync(join(dir, "bodies"))) copyFileSync(join(dir, "bodies", name), join(mainDir, "bodies", name));
  renameOrCopy(join(dir, `${run}.jsonl`), join(mainDir, `${run}.jsonl`));
  rmSync(dir, { recursive: true, force: true });
  const shipped = pendingCount() === 0;
  const counts = Object.fromEntries(frames.reduce((m, f) => m.set(f.kind, (m.get(f.kind) ?? 0) + 1), new Map<string, number>()));
  out(
    json,
    { ok: true, run, session_id: b.sessionId, frames: frames.length, kinds: counts, subagents, skipped_lines: b.bad, shipped, pending },
    `rebuilt session ${b.sessionId} as run ${run}: ${frames.length} frames from its transcript and ${subagents} subagent transcript(s), every one marked backfilled` +
      (b.bad ? `; ${b.bad} unreadable line(s) skipped (recorded as a gap)` : "") +
      (shipped
        ? "; shipped"
        : `; not yet delivered (${pending.frames} frames, ${pending.bodies} bodies): the recorder ships them when it next starts`),
  );
  return 0;
}

function renameOrCopy(from: string, to: string): void {
  try {
    renameSync(from, to);
  } catch {
    copyFileSync(from, to);
  }
}
