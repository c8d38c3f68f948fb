import { Hono } from "hono";
import { RECORD_FORMAT_VERSION, ROUTES } from "../../protocol/index.ts";
import type { AppEnv } from "../request-body.ts";

export const health = new Hono<AppEnv>().get(ROUTES.health, (c) =>
  c.json({ ok: true, version: c.env.OXAGEN_VERSION, protocol: RECORD_FORMAT_VERSION }),
);
