import { Hono } from "hono";
import { PROTOCOL_VERSION } from "../../protocol/index.ts";
import type { AppEnv } from "../body.ts";

export const health = new Hono<AppEnv>().get("/healthz", (c) =>
  c.json({ ok: true, version: c.env.OXAGEN_VERSION, protocol: PROTOCOL_VERSION }),
);
