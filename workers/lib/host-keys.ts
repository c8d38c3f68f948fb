import { and, eq, ne } from "drizzle-orm";
import { fromHex, type HostKeyRotation, hostKeyProofInput, keyIdFor, publicKeyProblem, verifyStrict } from "../../protocol/index.ts";
import { type HostRow, hostChanged, type RetiredKey, retiredKeysOf } from "../auth/host.ts";
import { db, schema } from "../db/client.ts";
import { AppError } from "../errors.ts";
import { touchHostPolicy } from "./host-policy.ts";
import { hubOf } from "./hubs.ts";

/** How many earlier keys a host row keeps (a chain pinned to an older one keeps it in its own state). */
const MAX_RETIRED_KEYS = 10;

/** A host's keys with their validity, the current one first (`not_after_ms` null while current). */
export function keysView(h: HostRow) {
  const current = { key_id: h.keyId, public_key: h.publicKey, not_before_ms: h.keySinceMs ?? h.enrolledMs, not_after_ms: h.unenrolledMs };
  const earlier = retiredKeysOf(h)
    .reverse()
    .map((k) => ({ key_id: k.key_id, public_key: k.pub, not_before_ms: k.not_before_ms, not_after_ms: k.not_after_ms }));
  return [current, ...earlier];
}

/**
 * Replaces a host's key with a new one the host proved it holds. The old key signs no request
 * from now on; it stays on record, and every chain its locks began goes on being checked with it.
 */
export async function rotateHostKey(env: Env, host: HostRow, req: HostKeyRotation, now: number) {
  const pub = fromHex(req.public_key, 32);
  const problem = publicKeyProblem(pub);
  if (problem) throw new AppError(400, "bad_public_key", `The new key is refused: ${problem}.`);
  const retired = retiredKeysOf(host);
  if (req.public_key === host.publicKey || retired.some((k) => k.pub === req.public_key))
    throw new AppError(409, "key_reused", "This key was this host's key before; make a new one.");
  if (!verifyStrict(pub, hostKeyProofInput(host.id, req.public_key, host.keyId), fromHex(req.proof, 64)))
    throw new AppError(400, "bad_proof", "The proof is not a signature by the new key over this host, the new key and the current key id.");
  const old: RetiredKey = { key_id: host.keyId, pub: host.publicKey, not_before_ms: host.keySinceMs ?? host.enrolledMs, not_after_ms: now };
  const keyId = keyIdFor(pub);
  const d = db(env);
  const [res] = await d.batch([
    d
      .update(schema.hosts)
      .set({ publicKey: req.public_key, keyId, keySinceMs: now, retiredKeys: JSON.stringify([...retired, old].slice(-MAX_RETIRED_KEYS)) })
      .where(and(eq(schema.hosts.id, host.id), eq(schema.hosts.publicKey, host.publicKey))),
    touchHostPolicy(d, host.id, now),
  ]);
  if (res.meta.changes !== 1) throw new AppError(409, "conflict", "The host's key changed while it was being rotated; try again.");
  await hostChanged(env, host.id);
  return { host_id: host.id, key_id: keyId, retired_key_id: host.keyId };
}

/**
 * Unenrolls a host: its keys sign nothing more (its requests are refused like an unknown host's),
 * the row stays for the runs it recorded, and its chains keep the keys that locked them.
 */
export async function unenrollHost(env: Env, host: HostRow, now: number) {
  await db(env)
    .update(schema.hosts)
    .set({ status: "unenrolled", unenrolledMs: now })
    .where(and(eq(schema.hosts.id, host.id), ne(schema.hosts.status, "unenrolled")));
  await hostChanged(env, host.id);
  // Its push connections end with it: nothing signed by its key is served any more.
  await hubOf(env, host.workspaceId, host.id)
    .disconnect(host.id)
    .catch((err: unknown) => console.error("push disconnect failed", host.id, err));
  return { host_id: host.id, status: "unenrolled" as const, unenrolled_ms: host.unenrolledMs ?? now };
}
