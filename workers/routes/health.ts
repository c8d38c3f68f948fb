import { Hono } from "hono";
import { type HealthAnswer, RECORD_FORMAT_VERSION, ROUTES } from "../../protocol/index.ts";
import { serverOrigin } from "../auth/host.ts";
import type { AppEnv } from "../request-body.ts";

export const health = new Hono<AppEnv>().get(ROUTES.health, (c) =>
  c.json({ ok: true, version: c.env.OXAGEN_VERSION, protocol: RECORD_FORMAT_VERSION, origin: serverOrigin(c.env) } satisfies HealthAnswer),
);
