import { Hono } from "hono";
import { notFound } from "../errors.ts";
import type { AppEnv } from "../request-body.ts";
import { meterCounts, meterOn } from "../lib/meter.ts";

/** `GET /__meter` (`?reset=1` clears): the platform calls counted so far (lib/meter.ts); no such route unless `OXAGEN_METER` is "1". */
export const meter = new Hono<AppEnv>().get("/__meter", (c) => {
  if (!meterOn(c.env)) throw notFound("route");
  return c.json(meterCounts(c.req.query("reset") === "1"));
});
