import { Hono } from "hono";
import { z } from "zod";
import { ChainId, FrameWire, MAX_INGEST_BYTES } from "../../protocol/index.ts";
import { readBody } from "../auth/host.ts";
import { notFound } from "../errors.ts";
import { check, parseJson } from "../validate.ts";

const BenchBody = z.strictObject({ chain: ChainId, frames: z.array(FrameWire).max(5000) });

/**
 * The benchmark floor: the same rows written into a ChainObject with no auth, no checks and no
 * hashing. Reachable only when the dev run sets BENCH=1 (`wrangler dev --var BENCH:1`); BENCH is
 * not in wrangler.toml, so a deployed Worker answers 404.
 */
export const bench = new Hono<{ Bindings: Env }>().post("/v1/bench/floor", async (c) => {
  // BENCH is a dev-only var, absent from the generated Env on purpose.
  if ((c.env as unknown as Record<string, unknown>).BENCH !== "1") throw notFound("route");
  const body = await readBody(c, MAX_INGEST_BYTES);
  const req = check(BenchBody, parseJson(new TextDecoder().decode(body), "request body"), "bench batch");
  const stored = await c.env.CHAINS.get(c.env.CHAINS.idFromName(req.chain)).benchAppend(req.frames, Date.now());
  return c.json({ stored });
});
