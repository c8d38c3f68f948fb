import { DurableObject } from "cloudflare:workers";
import { and, desc, eq, gt } from "drizzle-orm";
import { fromHex, publicKeyOf, verifyStrict } from "../protocol/index.ts";
import type { HostRow } from "./auth/host.ts";
import { db, schema } from "./db/client.ts";
import { admitQuotas, seedQuotas } from "./host/quotas.ts";
import { migrate } from "./host/schema.ts";
import { metered } from "./lib/meter.ts";
import type { QuotaRefusal, QuotaWanted } from "./lib/quotas.ts";
import { type HostPart, readHostPart } from "./lib/host-policy.ts";
import { hubOf } from "./lib/hubs.ts";
import type { HostCopy } from "./workspace/push-hub.ts";
import { project } from "./projection/messages.ts";

/** How often at most a host's last-seen time is sent to its D1 row (the console reads it in minutes). */
export const SEEN_EVERY_MS = 30_000;
/** How long the host's own policy part is kept before it is read from D1 again (an operator's change drops it at once). */
const PART_KEPT_MS = 10 * 60_000;
const HOUR_MS = 60 * 60_000;

/** A request to authenticate: what the host signed (protocol `requestSigningInput`), its signature and nonce. */
export interface HostSigned {
  input: Uint8Array;
  signature: string;
  nonce: string;
  /** The end of the request's time window: the nonce is kept until then. */
  expiresMs: number;
  now: number;
}

/** The outcome: the host's row, or why the request is refused. */
export type HostAuthAnswer = { host: HostRow; part?: HostPart; copy?: HostCopy } | { refused: "bad_signature" | "replayed" };

let standIn: Uint8Array | null = null;
// A key no host holds: an unknown host's request is checked against it, so it costs what a known one does.
function standInKey(): Uint8Array {
  standIn ??= publicKeyOf(new Uint8Array(32).fill(0x5a));
  return standIn;
}

/**
 * One per enrolled host (`env.HOSTS.idFromName(hostId)`): everything a signed request of the host
 * needs to be authenticated and admitted, so none of it reads D1: the host's key, keys and status
 * (a copy of its D1 row, read again by every operator action that changes it, `refresh`), its
 * request nonces, its quota windows, and its last-seen time (sent to D1 through the projection at
 * most every 30 s). An object that holds nothing yet reads the row from D1 once.
 */
export class HostObject extends DurableObject<Env> {
  #row: HostRow | null | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, metered(env, "HostObject"));
    void ctx.blockConcurrencyWhile(async () => migrate(ctx.storage));
  }

  /**
   * Checks a signed request under the host's key (the stand-in key for a host that is unknown or
   * unenrolled: the same work and the same answer), then admits its nonce once. Answers the host's
   * row with its last-seen time now.
   */
  async authenticate(hostId: string, req: HostSigned, opts: { policyPart?: boolean; copy?: boolean } = {}): Promise<HostAuthAnswer> {
    const row = await this.#load(hostId);
    const host = row && row.status !== "unenrolled" ? row : null;
    const ok = verifyStrict(host ? fromHex(host.publicKey, 32) : standInKey(), req.input, fromHex(req.signature, 64));
    if (!ok || !host) return { refused: "bad_signature" };
    const sql = this.ctx.storage.sql;
    const fresh = this.ctx.storage.transactionSync(() => {
      sql.exec("DELETE FROM nonces WHERE expires_ms < ?", req.now);
      return sql.exec("INSERT OR IGNORE INTO nonces (nonce, expires_ms) VALUES (?, ?)", req.nonce, req.expiresMs).rowsWritten > 0;
    });
    if (!fresh) return { refused: "replayed" };
    host.lastSeenMs = Math.max(host.lastSeenMs ?? 0, req.now);
    const sent = sql.exec<{ seen_sent_ms: number }>("SELECT seen_sent_ms FROM host WHERE id = 1").one().seen_sent_ms;
    if (req.now - sent >= SEEN_EVERY_MS) {
      this.#save(host, req.now);
      // Not awaited: the answer does not wait on the queue; a lost one is sent by the next request 30 s on.
      this.ctx.waitUntil(
        project(this.env, [{ kind: "host_seen", hostId: host.id, lastSeenMs: req.now }]).catch((err: unknown) =>
          console.error("host seen projection failed", host.id, err),
        ),
      );
    }
    if (!opts.policyPart && !opts.copy) return { host };
    const part = await this.policyPart(host.id, req.now);
    return opts.copy ? { host, part, copy: this.#copy(host, part, req.now).copy } : { host, part };
  }

  /**
   * Checks the host's quotas for what a request would create and records what is new (see
   * `host/quotas.ts`): null when admitted, else the refusal (nothing recorded).
   */
  admit(wanted: QuotaWanted, now: number): QuotaRefusal | null {
    return this.ctx.storage.transactionSync(() => admitQuotas(this.ctx.storage.sql, wanted, now));
  }

  /** Reads the host's row (and its own policy part) from D1 again: every operator action that changes either calls this after its write. */
  async refresh(hostId: string): Promise<HostRow | null> {
    const sql = this.ctx.storage.sql;
    sql.exec("DELETE FROM policy_part");
    const held = sql.exec<{ seen_sent_ms: number }>("SELECT seen_sent_ms FROM host WHERE id = 1").toArray()[0];
    this.#row = undefined;
    sql.exec("DELETE FROM host");
    // Its quota windows are filled already: only the row is read again.
    if (!held) return this.#load(hostId);
    const row = (await db(this.env).select().from(schema.hosts).where(eq(schema.hosts.id, hostId)))[0] ?? null;
    if (row) this.#save(row, held.seen_sent_ms);
    // The host's push hub holds a copy of its status and own part (what a pushed policy is made of): it is handed the new one before the change is announced.
    if (row) {
      const now = Date.now();
      // Again, unless handed already: an operator's change fails rather than leave the hub an older copy.
      await this.#tellHub(await this.policyPart(hostId, now), now);
    }
    return row;
  }

  /**
   * The host's own part of its policy (its paused runs and agents, when it last changed), read
   * from D1 when the object holds none or it is older than {@link PART_KEPT_MS}: a policy fetch
   * (every recorder's, after every push) asks D1 nothing.
   */
  async policyPart(hostId: string, now: number): Promise<HostPart> {
    const sql = this.ctx.storage.sql;
    const held = sql.exec<{ part: string; read_ms: number }>("SELECT part, read_ms FROM policy_part WHERE id = 1").toArray()[0];
    if (held && held.read_ms > now - PART_KEPT_MS) return JSON.parse(held.part) as HostPart;
    const part = await readHostPart(this.env, hostId, now);
    sql.exec("INSERT OR REPLACE INTO policy_part (id, part, read_ms) VALUES (1, ?, ?)", JSON.stringify(part), now);
    // A fetch does not fail for the hub: a copy not handed is handed by the next change or read.
    await this.#tellHub(part, now).catch((err: unknown) => console.error("hub copy not handed", hostId, err));
    return part;
  }

  /** A run of the host ended (or its computer ended the session): its policy no longer lists it as paused. */
  async runStopped(runId: string): Promise<void> {
    const sql = this.ctx.storage.sql;
    const held = sql.exec<{ part: string }>("SELECT part FROM policy_part WHERE id = 1").toArray()[0];
    if (!held) return;
    const part = JSON.parse(held.part) as HostPart;
    if (!part.pausedRuns.includes(runId)) return;
    part.pausedRuns = part.pausedRuns.filter((r) => r !== runId);
    sql.exec("UPDATE policy_part SET part = ? WHERE id = 1", JSON.stringify(part));
    await this.#tellHub(part, Date.now());
  }

  /**
   * The copy of the host's status and own part its push hub is handed, with a version that moves
   * on (never back) whenever either changes: the hub keeps the highest version it was handed, so
   * copies that cross on the way cannot leave it an older one. `keep` records it as handed.
   */
  #copy(row: HostRow, part: HostPart, now: number, keep = true): { copy: HostCopy; changed: boolean } {
    const sql = this.ctx.storage.sql;
    const content = JSON.stringify({ status: row.status, part });
    const held = sql.exec<{ copy: string; version: number }>("SELECT copy, version FROM hub_copy WHERE id = 1").toArray()[0];
    if (held?.copy === content) return { copy: { status: row.status, part, version: held.version }, changed: false };
    const version = Math.max(now, (held?.version ?? 0) + 1);
    if (keep) sql.exec("INSERT OR REPLACE INTO hub_copy (id, copy, version) VALUES (1, ?, ?)", content, version);
    return { copy: { status: row.status, part, version }, changed: true };
  }

  // Hands the host's hub its new copy when it changed (every change of the host's status or own
  // part passes here), recorded as handed only once the hub took it.
  async #tellHub(part: HostPart, now: number): Promise<void> {
    const row = this.#row ?? null;
    if (!row) return;
    const { copy, changed } = this.#copy(row, part, now, false);
    if (!changed) return;
    await hubOf(this.env, row.workspaceId, row.id).hostCopy(row.id, copy);
    this.#copy(row, part, now);
  }

  async #load(hostId: string): Promise<HostRow | null> {
    if (this.#row !== undefined) return this.#row;
    const sql = this.ctx.storage.sql;
    const stored = sql.exec<{ row: string }>("SELECT row FROM host WHERE id = 1").toArray()[0];
    if (stored) {
      this.#row = JSON.parse(stored.row) as HostRow;
      return this.#row;
    }
    const d = db(this.env);
    const now = Date.now();
    const [rows, names, runs] = await d.batch([
      d.select().from(schema.hosts).where(eq(schema.hosts.id, hostId)),
      d
        .select({ name: schema.agents.name, createdMs: schema.agents.createdMs })
        .from(schema.agents)
        .where(eq(schema.agents.hostId, hostId)),
      d
        .select({ id: schema.runs.id, createdMs: schema.runs.createdMs })
        .from(schema.runs)
        .where(and(eq(schema.runs.hostId, hostId), gt(schema.runs.createdMs, now - HOUR_MS)))
        .orderBy(desc(schema.runs.createdMs))
        .limit(1000),
    ]);
    const row = rows[0] ?? null;
    // An unknown host keeps nothing here: its next request looks again (it may be enrolling now).
    if (!row) return null;
    this.ctx.storage.transactionSync(() => {
      seedQuotas(sql, names, runs, now);
      this.#save(row, row.lastSeenMs ?? 0);
    });
    return row;
  }

  #save(row: HostRow, seenSentMs: number): void {
    this.#row = row;
    this.ctx.storage.sql.exec("INSERT OR REPLACE INTO host (id, row, seen_sent_ms) VALUES (1, ?, ?)", JSON.stringify(row), seenSentMs);
  }
}
