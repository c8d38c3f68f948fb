import { readFileSync } from "node:fs";
import { endorsedKey, fromHex, KeyEndorsements, openPolicy, policyEtag, ROUTES, SignedPolicy } from "../../protocol/index.ts";
import { hostFetch } from "../lib/server.ts";
import type { HostConfig } from "../lib/state.ts";
import { statePath, writeHost, writeStateFile } from "../lib/state.ts";
import type { CachedPolicy } from "./mapper.ts";

/** policy.json: the last signed policy that verified under the pinned server key, and its ETag. */
export interface PolicyFile {
  etag: string;
  policy: SignedPolicy;
  fetched_ms: number;
}

/**
 * Opens a signed policy against the pinned key; the reason when it does not hold. A policy that
 * names another host is refused; one that names no host only when `fresh` (from the server: every
 * policy it signs names its host, so one without a name was meant for somebody else).
 */
export function openCached(
  signed: unknown,
  host: HostConfig,
  fresh = false,
): { cached: CachedPolicy; signed: SignedPolicy } | { error: string } {
  const parsed = SignedPolicy.safeParse(signed);
  if (!parsed.success) return { error: "policy is not a signed policy bundle" };
  if (parsed.data.key_id !== host.server_key.key_id) return { error: "policy is signed by a key other than the pinned server key" };
  try {
    const policy = openPolicy(parsed.data, fromHex(host.server_key.pub, 32));
    if (policy.host !== host.host_id && (policy.host !== undefined || fresh))
      return { error: `policy is signed for ${policy.host ?? "no host"}, not for this computer (${host.host_id})` };
    return { cached: { policy, etag: policyEtag(parsed.data) }, signed: parsed.data };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

/** Reads policy.json; accepts the file shape above or a bare SignedPolicy. */
export function readPolicyFile(host: HostConfig): CachedPolicy | null {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(statePath("policy.json"), "utf8"));
  } catch {
    return null;
  }
  const signed = raw !== null && typeof raw === "object" && "policy" in raw ? (raw as { policy: unknown }).policy : raw;
  const opened = openCached(signed, host);
  return "cached" in opened ? opened.cached : null;
}

/**
 * Fetches this host's policy with If-None-Match. Returns the new policy ({@link acceptPolicy}),
 * "unchanged" on 304, or throws with the reason (the caller keeps the cached one).
 */
export async function fetchPolicy(host: HostConfig, etag: string | null, now: number): Promise<CachedPolicy | "unchanged"> {
  const res = await hostFetch(host, ROUTES.policy, { headers: etag ? { "if-none-match": `"${etag}"` } : {}, timeoutMs: 15_000 });
  if (res.status === 304) return "unchanged";
  if (!res.ok) throw new Error(`policy fetch: HTTP ${res.status}`);
  const body = (await res.json()) as unknown;
  const signed =
    body !== null && typeof body === "object" && "policy" in body && !("payload" in body) ? (body as { policy: unknown }).policy : body;
  return acceptPolicy(host, signed, now);
}

/**
 * Takes a signed policy from the server (fetched, or carried by a push): verified under the pinned
 * key (a new key learned only through the pinned one's endorsement), naming this host, and not
 * issued before the cached one (a host's policy never goes back, so an older one is a replay);
 * then cached. Throws with the reason; the cached policy stays.
 */
export async function acceptPolicy(host: HostConfig, signed: unknown, now: number): Promise<CachedPolicy> {
  const keyId = SignedPolicy.safeParse(signed).data?.key_id;
  if (keyId && keyId !== host.server_key.key_id) await learnServerKey(host, keyId);
  const opened = openCached(signed, host, true);
  if ("error" in opened) throw new Error(`policy refused: ${opened.error}`);
  const current = readPolicyFile(host);
  if (current && opened.cached.policy.issued_ms < current.policy.issued_ms)
    throw new Error("policy refused: it was issued before the one already cached");
  const file: PolicyFile = { etag: opened.cached.etag, policy: opened.signed, fetched_ms: now };
  writeStateFile("policy.json", `${JSON.stringify(file, null, 2)}\n`);
  return opened.cached;
}

/**
 * Learns the server's new key from the endorsements the server publishes: only a key the pinned
 * key vouched for (directly or through the keys after it) replaces the pin, in host.json and in
 * `host`. Anything else leaves the pin as it is, and the policy it signed is refused.
 */
async function learnServerKey(host: HostConfig, keyId: string): Promise<void> {
  let answer: unknown;
  try {
    const res = await fetch(new URL(ROUTES.keyEndorsements, host.server), { signal: AbortSignal.timeout(15_000) });
    answer = res.ok ? await res.json() : null;
  } catch {
    return;
  }
  const parsed = KeyEndorsements.safeParse(answer);
  const learned = parsed.success ? endorsedKey(host.server_key, keyId, parsed.data.endorsements) : null;
  if (!learned) return;
  host.server_key = learned;
  writeHost(host);
}
