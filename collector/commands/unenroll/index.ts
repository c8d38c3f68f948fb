import { existsSync, readFileSync, rmSync } from "node:fs";
import { ErrorAnswer, ROUTES } from "../../../protocol/index.ts";
import { applyHarnesses, type HarnessResult } from "../../harnesses/apply.ts";
import { parse } from "../../lib/args.ts";
import { ExitError, UsageError } from "../../lib/errors.ts";
import { useNodeCrypto } from "../../lib/node-crypto.ts";
import { hostFetch } from "../../lib/server.ts";
import { readHost, statePath } from "../../lib/state.ts";
import { requireRecorderStopped } from "../../lib/stopped.ts";
import { Journal } from "../../recorder/journal.ts";

export const USAGE = "usage: tacho unenroll [--force] [--json]";

/** What is recorded here and not yet delivered: frames, locks and bodies in the journal, events in the spool. */
function undelivered(): { frames: number; locks: number; bodies: number; spooled: number } {
  const journal = new Journal(statePath("journal"));
  const out = { frames: 0, locks: 0, bodies: 0, spooled: 0 };
  try {
    for (const rec of journal.chains.values()) {
      out.frames += rec.frames.length;
      out.locks += rec.locks.length;
      out.bodies += rec.bodies.length;
    }
  } finally {
    journal.close();
  }
  for (const name of ["events.jsonl", "replaying.jsonl"]) {
    const path = statePath("spool", name);
    if (existsSync(path))
      out.spooled += readFileSync(path, "utf8")
        .split("\n")
        .filter((l) => l.trim()).length;
  }
  return out;
}

/** Tells the server; "gone" when it already does not know this host's key (unenrolled by an operator). */
async function tellServer(host: NonNullable<ReturnType<typeof readHost>>): Promise<"unenrolled" | "gone" | { error: string }> {
  try {
    const res = await hostFetch(host, ROUTES.hostStatus, { method: "DELETE", timeoutMs: 15_000 });
    if (res.ok) return "unenrolled";
    const answer = ErrorAnswer.safeParse(await res.json().catch(() => null));
    if (res.status === 401 && answer.success && answer.data.error === "bad_signature") return "gone";
    return { error: `HTTP ${res.status}: ${answer.success ? answer.data.message : "no reason given"}` };
  } catch (err) {
    return { error: `cannot reach ${host.server}: ${(err as Error).message}` };
  }
}

/**
 * Unenrolls this computer: the server stops taking its key, the hook entries leave every wrapped
 * harness's configuration, and the enrollment (host.json with its secret key), the cached policy,
 * the journal and the spool are removed. Refuses while anything recorded is undelivered, unless
 * --force.
 */
export async function unenroll(args: string[]): Promise<number> {
  const { values, positionals } = parse("tacho unenroll", args, {
    force: { type: "boolean", default: false },
    json: { type: "boolean", default: false },
  });
  if (positionals.length > 0) throw new UsageError(`tacho unenroll: unexpected ${positionals.join(" ")}\n${USAGE}`);
  const host = readHost();
  if (!host) throw new ExitError(1, "tacho unenroll: this computer is not enrolled");
  requireRecorderStopped("tacho unenroll", "or start it and let it deliver what it holds first");
  const left = undelivered();
  const pending = left.frames + left.locks + left.bodies + left.spooled;
  if (pending > 0 && !values.force)
    throw new ExitError(
      1,
      `tacho unenroll: ${left.frames} frames, ${left.locks} locks, ${left.bodies} bodies and ${left.spooled} spooled events are not delivered yet; ` +
        "start the recorder (tacho daemon start) to deliver them, or pass --force to drop them",
    );
  useNodeCrypto();
  const server = await tellServer(host);
  if (typeof server === "object" && !values.force)
    throw new ExitError(
      1,
      `tacho unenroll: the server was not told (${server.error}); nothing was changed. Pass --force to unenroll here anyway`,
    );
  const removed: HarnessResult[] = applyHarnesses(host, host.harnesses, "remove");
  for (const name of ["host.json", "policy.json", "journal", "spool", "recorder-status.json"])
    rmSync(statePath(name), { recursive: true, force: true });
  const told = typeof server === "object" ? `not told: ${server.error}` : server;
  if (values.json) {
    process.stdout.write(`${JSON.stringify({ host_id: host.host_id, server: told, dropped: pending, removed }, null, 2)}\n`);
  } else {
    const lines = [`unenrolled ${host.host_id} (server: ${told})`];
    for (const r of removed) lines.push(`${r.harness}: hooks ${r.changed ? "removed from" : "were not in"} ${r.config}`);
    if (pending > 0) lines.push(`dropped ${pending} undelivered items (--force)`);
    process.stdout.write(`${lines.join("\n")}\n`);
  }
  return 0;
}
