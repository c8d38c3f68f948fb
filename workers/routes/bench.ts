import { Hono } from "hono";
import { z } from "zod";
import { ChainId, FrameWire } from "../../protocol/index.ts";
import { notFound } from "../errors.ts";
import { check, jsonBody } from "../validate.ts";
import type { AppEnv } from "../body.ts";

const BenchBody = z.strictObject({ chain: ChainId, frames: z.array(FrameWire).max(5000) });

/**
 * The benchmark floor: the same rows written into a ChainObject with no auth, no checks and no
 * hashing. Reachable only when the dev run sets BENCH=1 (`wrangler dev --var BENCH:1`); BENCH is
 * not in wrangler.toml, so a deployed Worker answers 404.
 */
export const bench = new Hono<AppEnv>().post("/v1/bench/floor", async (c) => {
  // BENCH is a dev-only var, absent from the generated Env on purpose.
  if ((c.env as unknown as Record<string, unknown>).BENCH !== "1") throw notFound("route");
  const req = check(BenchBody, jsonBody(c, "request body"), "bench batch");
  const stored = await c.env.CHAINS.get(c.env.CHAINS.idFromName(req.chain)).benchAppend(req.frames, Date.now());
  return c.json({ stored });
});
