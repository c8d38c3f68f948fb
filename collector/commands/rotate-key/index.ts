import {
  bytesToHex,
  ErrorAnswer,
  fromHex,
  HostKeyAnswer,
  hostKeyProofInput,
  keyIdFor,
  newSecretKey,
  publicKeyOf,
  ROUTES,
  sign,
} from "../../../protocol/index.ts";
import { parse } from "../../lib/args.ts";
import { ExitError, UsageError } from "../../lib/errors.ts";
import { useNodeCrypto } from "../../lib/node-crypto.ts";
import { hostFetch } from "../../lib/server.ts";
import { type HostConfig, readHost, statePath, writeHost } from "../../lib/state.ts";
import { requireRecorderStopped } from "../../lib/stopped.ts";
import { Journal } from "../../recorder/journal/index.ts";

export const USAGE = `usage: tacho rotate-key [--json]

Gives this computer a new host key: the server takes it on a request signed with the current key,
and host.json holds it from then on. Open chains that the old key began locking keep it until they
end (one key locks a chain from its first lock to its last). Stop the recorder first (tacho daemon
stop); start it again after.

  --json   print the new key id and the chains still locked with the old key as JSON`;

/** Open chains the journal holds that a lock already began: their locks stay with the key that began them. */
function lockedOpenChains(): string[] {
  const journal = new Journal(statePath("journal"));
  try {
    return [...journal.chains.values()].filter((r) => r.writer.state.lockSeq > 0 && !r.writer.state.final).map((r) => r.chain);
  } finally {
    journal.close();
  }
}

/**
 * Replaces this computer's host key: a new key is made, the server takes it on a request signed
 * with the current key and the new key's proof, and host.json holds it from then on. The old key
 * is kept only for the open chains it began locking, until they end.
 */
export async function rotateKey(args: string[]): Promise<number> {
  const { values, positionals } = parse("tacho rotate-key", args, { json: { type: "boolean", default: false } });
  if (positionals.length > 0) throw new UsageError(`tacho rotate-key: unexpected ${positionals.join(" ")}\n${USAGE}`);
  const host = readHost();
  if (!host) throw new ExitError(1, "tacho rotate-key: this computer is not enrolled; run tacho enroll first");
  requireRecorderStopped("tacho rotate-key", "rotate, then start it again with tacho daemon start");
  useNodeCrypto();
  const secret = newSecretKey();
  const publicKey = bytesToHex(publicKeyOf(secret));
  const currentKeyId = keyIdFor(fromHex(host.public_key, 32));
  const proof = bytesToHex(sign(secret, hostKeyProofInput(host.host_id, publicKey, currentKeyId)));
  let res: Response;
  try {
    res = await hostFetch(host, ROUTES.hostKey, {
      method: "POST",
      body: new TextEncoder().encode(JSON.stringify({ public_key: publicKey, proof })),
      headers: { "content-type": "application/json" },
    });
  } catch (err) {
    throw new ExitError(1, `tacho rotate-key: cannot reach ${host.server}: ${(err as Error).message}; the key is unchanged`);
  }
  const answer: unknown = await res.json().catch(() => null);
  if (!res.ok) {
    const error = ErrorAnswer.safeParse(answer);
    throw new ExitError(
      1,
      `tacho rotate-key: refused (HTTP ${res.status}): ${error.success ? error.data.message : "no reason given"}; the key is unchanged`,
    );
  }
  const parsed = HostKeyAnswer.safeParse(answer);
  if (!parsed.success || parsed.data.key_id !== keyIdFor(publicKeyOf(secret)))
    throw new ExitError(1, "tacho rotate-key: the server's answer is not one this collector understands");
  // A chain an earlier key began stays with that key; the others the current key began stay with it.
  const open = new Set(lockedOpenChains());
  const kept = (host.previous_keys ?? [])
    .map((k) => ({ ...k, chains: k.chains.filter((c) => open.has(c)) }))
    .filter((k) => k.chains.length);
  const claimed = new Set(kept.flatMap((k) => k.chains));
  const chains = [...open].filter((c) => !claimed.has(c));
  const retiring = { secret_key: host.secret_key, public_key: host.public_key, key_id: currentKeyId, retired_ms: Date.now(), chains };
  const previous = chains.length ? [...kept, retiring] : kept;
  const next: HostConfig = { ...host, secret_key: bytesToHex(secret), public_key: publicKey };
  if (previous.length) next.previous_keys = previous;
  else delete next.previous_keys;
  writeHost(next);
  const out = { host_id: host.host_id, key_id: parsed.data.key_id, retired_key_id: currentKeyId, open_chains_on_old_key: open.size };
  process.stdout.write(
    values.json
      ? `${JSON.stringify(out)}\n`
      : `host key rotated: ${currentKeyId} -> ${out.key_id}${open.size ? `; ${open.size} open chains keep the key that began them until they end` : ""}\n`,
  );
  return 0;
}
