import { Hono } from "hono";
import { bytesToHex, ROUTES } from "../../protocol/index.ts";
import { serverKey } from "../keys.ts";
import type { AppEnv } from "../body.ts";

export const keys = new Hono<AppEnv>().get(ROUTES.keys, (c) => {
  const key = serverKey(c.env);
  return c.json({ keys: [{ key_id: key.keyId, alg: "ed25519", pub: bytesToHex(key.pub), use: ["bundle", "policy", "seal"] }] });
});
