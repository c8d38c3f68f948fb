import { endorsedKey, KeyEndorsements, type PinnedKey, pinKeyList, ROUTES, ServerKeySet } from "../../../protocol/index.ts";
import { type Credentials, fingerprint, type OperatorApi, writeCredentials } from "../../lib/operator.ts";

/**
 * The keys to verify a bundle signed by `keyId` with: the ones pinned at login. A key not pinned
 * is taken only when the server's endorsements lead to it from a pinned key (protocol
 * `endorsedKey`, as a collector moves its pin); it is pinned from then on. Otherwise the pinned
 * keys alone, and the verifier says the bundle's key is unknown.
 */
export async function keysFor(api: OperatorApi, keyId: string | null): Promise<{ keys: PinnedKey[]; said: string | null }> {
  const creds = api.creds;
  const pinned = () => pinKeyList({ keys: creds.keys });
  if (keyId === null || creds.keys.some((k) => k.key_id === keyId)) return { keys: pinned(), said: null };
  const [set, endorsements] = await Promise.all([
    api.json(ROUTES.keys).then((v) => ServerKeySet.parse(v)),
    api.json(ROUTES.keyEndorsements).then((v) => KeyEndorsements.parse(v)),
  ]);
  const entry = set.keys.find((k) => k.key_id === keyId);
  const reached = entry
    ? creds.keys
        .map((p) => endorsedKey({ key_id: p.key_id, pub: p.pub }, keyId, endorsements.endorsements))
        .find((k) => k?.pub === entry.pub)
    : undefined;
  if (!entry || !reached)
    return {
      keys: pinned(),
      said: `the bundle is signed by key ${keyId}, which no key pinned at login endorses: if it is your server's new key, check its fingerprint and sign in again (oxagen login)`,
    };
  // The server's own periods for every key it lists that was pinned or is the new one.
  const keep = new Set([...creds.keys.map((k) => k.key_id), keyId]);
  const next: Credentials = { ...creds, keys: set.keys.filter((k) => keep.has(k.key_id)) };
  writeCredentials(next);
  return {
    keys: pinKeyList({ keys: next.keys }),
    said: `pinned the server's new key ${keyId} (${fingerprint(entry.pub)}): a key pinned at login endorses it`,
  };
}
