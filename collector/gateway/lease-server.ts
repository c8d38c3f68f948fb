import { BudgetLeaseGrant, ROUTES } from "../../protocol/index.ts";
import { hostFetch } from "../lib/server.ts";
import type { HostConfig } from "../lib/state.ts";

/** What the server answered to a lease or a resize (docs/api.md, "Budget leases"). */
export type LeaseReply =
  | BudgetLeaseGrant
  /** 409: the lease would pass a budget; `spent_microusd` (and `reserved_microusd`) count the amount asked for; `room_microusd` is what was left. */
  | {
      granted: false;
      exhausted: { budget: string; spent_microusd: number; reserved_microusd?: number; limit_microusd: number };
      room_microusd?: number;
    }
  /** 404 to a resize: the lease expired or is unknown. */
  | { granted: false; gone: true }
  /** The server could not be asked (down, offline, a 5xx, an answer we cannot read). */
  | { granted: false; unreachable: string }
  /** 400: the server rejected the request itself (not an outage: the call is not let through unreserved). */
  | { granted: false; rejected: string };

/** The server's budget leases, as the holder uses them. */
export interface LeaseServer {
  open(run: string, microusd: number, ttlMs: number): Promise<LeaseReply>;
  resize(leaseId: string, addMicrousd: number, ttlMs: number): Promise<LeaseReply>;
}

/** The server's lease routes, host-signed (a lease call that cannot complete in `timeoutMs` counts as unreachable). */
export function httpLeaseServer(host: HostConfig, timeoutMs = 5000): LeaseServer {
  const call = async (method: "POST" | "PATCH", path: string, json?: unknown): Promise<LeaseReply> => {
    try {
      const body = json === undefined ? undefined : new TextEncoder().encode(JSON.stringify(json));
      const res = await hostFetch(host, path, { method, body, headers: body ? { "content-type": "application/json" } : {}, timeoutMs });
      const answer = (await res.json().catch(() => null)) as Record<string, unknown> | null;
      if (res.status === 409 && answer?.error === "budget_exhausted") {
        const room = answer.room_microusd;
        return { granted: false, exhausted: answer.exhausted as never, ...(typeof room === "number" ? { room_microusd: room } : {}) };
      }
      if (res.status === 404 && method === "PATCH") return { granted: false, gone: true };
      if (res.status === 400) return { granted: false, rejected: `400 ${String(answer?.error ?? "")}: ${String(answer?.message ?? "")}` };
      const grant = BudgetLeaseGrant.safeParse(answer);
      if (res.ok && grant.success) return grant.data;
      return { granted: false, unreachable: `${res.status} ${String(answer?.error ?? "")}`.trim() };
    } catch (err) {
      return { granted: false, unreachable: (err as Error).message };
    }
  };
  return {
    open: (run, microusd, ttlMs) => call("POST", ROUTES.budgetLease, { run, microusd, ttl_ms: ttlMs }),
    resize: (id, add, ttlMs) => call("PATCH", ROUTES.budgetSettle(id), { add_microusd: add, ttl_ms: ttlMs }),
  };
}
