import { Hono } from "hono";
import { z } from "zod";
import { RunId } from "../../protocol/index.ts";
import { operatorAuth, type OperatorEnv } from "../auth/operator.ts";
import { runCoverage } from "../lib/coverage.ts";
import { runView } from "../lib/run-rows.ts";
import {
  exportAnswer,
  listRuns,
  ownRun,
  pauseRun,
  RunListQuery,
  resumeRun,
  runDetail,
  runDetailView,
  runFrames,
  sealRun,
} from "../lib/runs.ts";
import { valid } from "../validate.ts";
import { ownHost } from "./hosts.ts";

const int = z.coerce.number().int().nonnegative();
const IdParam = z.object({ id: RunId });
/** A run, or a computer's own chain (`host_<host id>`): its frames are readable too (the calls tied to no session). */
const ChainParam = z.object({ id: z.union([RunId, z.string().regex(/^host_[a-z0-9][a-z0-9_-]{0,63}$/, "not a run or host chain id")]) });
const FramesQuery = z.strictObject({ from: int.default(0), limit: z.coerce.number().int().min(1).max(1000).default(100) });

export const runs = new Hono<OperatorEnv>()
  .use("/v1/runs", operatorAuth)
  .use("/v1/runs/*", operatorAuth)
  .get("/v1/runs", valid("query", RunListQuery), async (c) => {
    const page = await listRuns(c.env, c.var.workspaceId, c.req.valid("query"));
    return c.json({ runs: page.runs.map(runView), next: page.next });
  })
  .get("/v1/runs/:id", valid("param", IdParam), async (c) => {
    const row = await ownRun(c.env, c.var.workspaceId, c.req.valid("param").id);
    return c.json(runDetailView(await runDetail(c.env, row)));
  })
  .get("/v1/runs/:id/coverage", valid("param", IdParam), async (c) => {
    const row = await ownRun(c.env, c.var.workspaceId, c.req.valid("param").id);
    return c.json(runCoverage(await runDetail(c.env, row)));
  })
  .get("/v1/runs/:id/frames", valid("param", ChainParam), valid("query", FramesQuery), async (c) => {
    const id = c.req.valid("param").id;
    const q = c.req.valid("query");
    if (id.startsWith("host_")) {
      // The computer's own chain: the workspace's computer, or no such chain (as for a run).
      await ownHost(c.env, c.var.workspaceId, id.slice("host_".length));
      return c.json(await c.env.CHAINS.get(c.env.CHAINS.idFromName(id)).frames(q.from, q.limit));
    }
    const row = await ownRun(c.env, c.var.workspaceId, id);
    return c.json(await runFrames(c.env, row, q.from, q.limit));
  })
  .post("/v1/runs/:id/seal", valid("param", IdParam), async (c) => {
    const row = await ownRun(c.env, c.var.workspaceId, c.req.valid("param").id);
    const sealed = await sealRun(c.env, row);
    return c.json({ ...runView(sealed.row), propagation: sealed.propagation });
  })
  .post("/v1/runs/:id/pause", valid("param", IdParam), async (c) => {
    const row = await ownRun(c.env, c.var.workspaceId, c.req.valid("param").id);
    return c.json({ id: row.id, paused: true, propagation: await pauseRun(c.env, row) });
  })
  .post("/v1/runs/:id/resume", valid("param", IdParam), async (c) => {
    const row = await ownRun(c.env, c.var.workspaceId, c.req.valid("param").id);
    return c.json({ id: row.id, paused: false, propagation: await resumeRun(c.env, row) });
  })
  .get("/v1/runs/:id/export", valid("param", IdParam), async (c) => {
    return exportAnswer(c.env, await ownRun(c.env, c.var.workspaceId, c.req.valid("param").id));
  });
