import { Hono } from "hono";
import { type KeyEndorsement, ROUTES, type ServerKeyEntry } from "../../protocol/index.ts";
import type { AppEnv } from "../request-body.ts";
import { serverKeys } from "../keys.ts";

/** Public: every key the server signs or signed with and when (protocol server-keys.ts), and the endorsements between them. */
export const keys = new Hono<AppEnv>()
  .get(ROUTES.keys, async (c) => {
    const rows = await serverKeys(c.env);
    const keys: ServerKeyEntry[] = rows.map((r) => ({
      key_id: r.keyId,
      alg: "ed25519",
      pub: r.publicKey,
      use: ["bundle", "policy", "seal"],
      not_before_ms: r.notBeforeMs,
      not_after_ms: r.notAfterMs,
    }));
    return c.json({ keys });
  })
  .get(ROUTES.keyEndorsements, async (c) => {
    const rows = await serverKeys(c.env);
    const endorsements: KeyEndorsement[] = rows.flatMap((r) =>
      r.endorsedBy && r.endorsement
        ? [{ key_id: r.keyId, pub: r.publicKey, not_before_ms: r.notBeforeMs, by: r.endorsedBy, sig: r.endorsement }]
        : [],
    );
    return c.json({ endorsements });
  });
