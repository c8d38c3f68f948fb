import { Hono } from "hono";
import { PROTOCOL_VERSION } from "../../protocol/index.ts";

export const health = new Hono<{ Bindings: Env }>().get("/healthz", (c) =>
  c.json({ ok: true, version: c.env.OXAGEN_VERSION, protocol: PROTOCOL_VERSION }),
);
