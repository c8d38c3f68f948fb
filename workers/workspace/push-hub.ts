/**
 * The push side of a workspace's object: its recorders' WebSocket connections (one tag, the host
 * id), the announcements sent over them, and the acknowledgements that come back.
 */
import { type Policy, policyEtag, type SignedPolicy } from "../../protocol/index.ts";
import type { HostRow } from "../auth/host.ts";
import { composePolicy, type HostPart, type WorkspacePart } from "../lib/host-policy.ts";
import { concernsHost, type ExhaustedScope } from "./budgets.ts";

/**
 * What a push connection receives: a change, with the host's new ETag and its signed policy
 * (verified by the recorder as a fetched one is), or with `*` and no policy (fetch to learn yours).
 */
export interface PolicyPush {
  type: "policy";
  etag: string;
  /** The announcement's id; the recorder names it in its acknowledgement. */
  change: string;
  /** The host's own signed policy, when the hub could make it (else the recorder fetches it). */
  policy?: SignedPolicy;
}

/** The largest policy a push carries (its payload's characters); a larger one is announced with `*` and fetched. */
export const MAX_PUSHED_POLICY_CHARS = 128 * 1024;

/**
 * What a hub holds of a host to make its policy without asking anybody (handed by the host's
 * HostObject on every change, and by the push route on connect): its status, its own part, and
 * the copy's version (the hub keeps the highest).
 */
export interface HostCopy {
  status: HostRow["status"];
  part: HostPart;
  version: number;
}

/**
 * The workspace's part of every host's policy, for a workspace-wide announcement: the exhausted
 * scopes of all hosts (each host's policy takes those that concern it), and whether that list is
 * whole (else every recorder is told to fetch).
 */
export interface PushPart extends Omit<WorkspacePart, "exhausted"> {
  exhausted: { scopes: ExhaustedScope[]; changedMs: number; complete: boolean };
}

/** What a recorder sends once it fetched, verified and applied the policy an announcement named. */
export interface PushAck {
  type: "ack";
  change: string;
  /** The ETag of the policy the recorder now decides from. */
  etag?: string;
}

/** An announcement's outcome: the hosts it reached, and those that did not acknowledge it within the wait. */
export interface Announced {
  change: string;
  /** Hosts with a connection the announcement was sent on. */
  connected: string[];
  /** Of those, the hosts none of whose connections acknowledged it in time. */
  slow: string[];
}

/** Who an announcement is for: each named host with its new ETag (and signed policy), or every connection of the workspace. */
export type Audience = { host: string; etag: string; policy?: SignedPolicy }[] | "all";

/** A fresh announcement id. */
export function newChange(): string {
  return `chg_${crypto.randomUUID().replaceAll("-", "")}`;
}

/** The longest any announcement waits, whatever the caller asks (an RPC must not hang on a silent connection). */
const MAX_WAIT_MS = 30_000;

export class PushHub {
  readonly #ctx: DurableObjectState;
  readonly #sign: (policy: Policy) => Promise<SignedPolicy>;
  /** Announcements being waited on: the hosts that have not acknowledged yet. */
  readonly #waiting = new Map<string, { left: Set<string>; done: () => void }>();

  constructor(ctx: DurableObjectState, sign: (policy: Policy) => Promise<SignedPolicy>) {
    this.#ctx = ctx;
    this.#sign = sign;
  }

  /** Takes a host's copy unless the hub holds a newer one; an unenrolled host's is dropped. */
  hostCopy(host: string, copy: HostCopy): void {
    const sql = this.#ctx.storage.sql;
    if (copy.status === "unenrolled") {
      sql.exec("DELETE FROM copies WHERE host = ?", host);
      return;
    }
    sql.exec(
      `INSERT INTO copies (host, copy, version) VALUES (?, ?, ?)
       ON CONFLICT (host) DO UPDATE SET copy = excluded.copy, version = excluded.version WHERE excluded.version > copies.version`,
      host,
      JSON.stringify({ status: copy.status, part: copy.part }),
      copy.version,
    );
  }

  /** Drops a host's copy: its pushes name `*` until it is handed a new one. */
  forget(host: string): void {
    this.#ctx.storage.sql.exec("DELETE FROM copies WHERE host = ?", host);
  }

  /** Each connected host's signed policy, made from the workspace's part and the copy held of the host (none without a copy). */
  async #policies(hosts: string[], ws: PushPart): Promise<Map<string, SignedPolicy>> {
    const made = new Map<string, SignedPolicy>();
    if (!ws.exhausted.complete) return made;
    const held = this.#ctx.storage.sql
      .exec<{ host: string; copy: string }>(
        "SELECT host, copy FROM copies WHERE host IN (SELECT value FROM json_each(?))",
        JSON.stringify(hosts),
      )
      .toArray();
    for (const { host, copy } of held) {
      const c = JSON.parse(copy) as Pick<HostCopy, "status" | "part">;
      const exhausted = { scopes: ws.exhausted.scopes.filter((s) => concernsHost(s, host)), changedMs: ws.exhausted.changedMs };
      try {
        const signed = await this.#sign(composePolicy({ id: host, status: c.status }, c.part, { ...ws, exhausted }));
        if (signed.payload.length <= MAX_PUSHED_POLICY_CHARS) made.set(host, signed);
      } catch (err) {
        // That host is told `*` and fetches; the others still get theirs.
        console.error("pushed policy not made", host, err);
      }
    }
    return made;
  }

  /**
   * Sends the announcement, then waits until every host it reached acknowledged it on one of its
   * connections, or `waitMs` passed. The object stays in memory while it waits (an RPC is in
   * flight), so the acknowledgements reach this instance's {@link ack}.
   */
  async announce(to: Audience, waitMs: number, change = newChange(), part?: PushPart): Promise<Announced> {
    const left = new Set<string>();
    const send = (ws: WebSocket, host: string, etag: string, policy?: SignedPolicy) => {
      try {
        const carried = policy && policy.payload.length <= MAX_PUSHED_POLICY_CHARS ? { policy } : {};
        ws.send(JSON.stringify({ type: "policy", etag, change, ...carried } satisfies PolicyPush));
        left.add(host);
      } catch {
        // A connection closing as we send: its recorder reconnects and fetches on open.
      }
    };
    if (to === "all") {
      const sockets = this.#ctx.getWebSockets().map((ws) => [ws, this.#ctx.getTags(ws)[0]] as const);
      const hosts = [...new Set(sockets.flatMap(([, host]) => (host ? [host] : [])))];
      const made = part ? await this.#policies(hosts, part) : new Map<string, SignedPolicy>();
      for (const [ws, host] of sockets) {
        const policy = host ? made.get(host) : undefined;
        if (host) send(ws, host, policy ? policyEtag(policy) : "*", policy);
      }
    } else {
      for (const { host, etag, policy } of to) for (const ws of this.#ctx.getWebSockets(host)) send(ws, host, etag, policy);
    }
    const connected = [...left];
    const wait = Math.min(Math.max(0, waitMs), MAX_WAIT_MS);
    if (left.size > 0 && wait > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => done(), wait);
        const done = () => {
          clearTimeout(timer);
          this.#waiting.delete(change);
          resolve();
        };
        this.#waiting.set(change, { left, done });
      });
    }
    return { change, connected, slow: [...left] };
  }

  /** Takes a message a recorder sent: an acknowledgement counts for the host its connection is tagged with. */
  message(ws: WebSocket, data: string | ArrayBuffer): void {
    if (typeof data !== "string" || data.length > 1024) return;
    let msg: Partial<PushAck>;
    try {
      msg = JSON.parse(data) as Partial<PushAck>;
    } catch {
      return;
    }
    if (msg?.type !== "ack" || typeof msg.change !== "string") return;
    const waiting = this.#waiting.get(msg.change);
    const host = this.#ctx.getTags(ws)[0];
    if (!waiting || !host) return;
    waiting.left.delete(host);
    if (waiting.left.size === 0) waiting.done();
  }

  /** The hosts with a push connection open now. */
  connectedHosts(): string[] {
    return [...new Set(this.#ctx.getWebSockets().flatMap((ws) => this.#ctx.getTags(ws)))];
  }
}
