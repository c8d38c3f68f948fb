/** @jsxImportSource hono/jsx */
import { eq } from "drizzle-orm";
import { Hono } from "hono";
import { normalizeUserCode } from "../../protocol/index.ts";
import { db, schema } from "../db/client.ts";
import { notFound } from "../errors.ts";
import { DEVICE_PAGE, type DeviceRow, decideDevice, deviceKeyId, deviceState, findDevice } from "../lib/device.ts";
import { checkedForm, pageCtx } from "./context.ts";
import { type DeviceView, DevicePage } from "./pages/device.tsx";
import type { ConsoleEnv } from "./session.ts";

function view(row: DeviceRow, code: string, now: number): DeviceView {
  let harnesses: string[] = [];
  try {
    harnesses = JSON.parse(row.harnesses) as string[];
  } catch {
    // Written by this server as JSON; a damaged row shows none rather than failing the page.
  }
  return {
    id: row.id,
    code,
    purpose: row.purpose,
    state: deviceState(row, now),
    hostname: row.hostname,
    user: row.username,
    os: row.os,
    harnesses,
    keyId: deviceKeyId(row),
    askedWorkspace: row.askedWorkspace,
    address: row.address,
    createdMs: row.createdMs,
    expiresMs: row.expiresMs,
    decidedBy: row.decidedBy,
    decidedMs: row.decidedMs,
    decidedWorkspace: row.workspaceId,
    issuedMs: row.issuedMs,
  };
}

const DONE = {
  approved: "Approved. The command line collects it at its next poll, within a few seconds, and finishes on its own.",
  denied: "Denied. The command line stops, and nothing was issued.",
  late: "That code was decided already, or expired, before your answer: nothing changed.",
} as const;

/**
 * The console's device page (protocol/device.ts): look a code up, see what asks (computer, user, OS,
 * harnesses, host key, address), approve it into the signed-in workspace or deny it. A code of
 * another workspace's decision shows as not found: a decided code is shown only in its workspace.
 */
export const deviceConsole = new Hono<ConsoleEnv>()
  .get(DEVICE_PAGE, async (c) => {
    const ctx = pageCtx(c);
    const done = c.req.query("done");
    const notice = done && Object.hasOwn(DONE, done) ? DONE[done as keyof typeof DONE] : null;
    const typed = (c.req.query("code") ?? "").trim();
    if (!typed) return c.html(<DevicePage ctx={ctx} device={null} typed="" error={null} notice={notice} />);
    const code = normalizeUserCode(typed);
    const row = code ? await findDevice(c.env, code, ctx.tokenId) : null;
    const visible = row && (row.workspaceId === null || row.workspaceId === ctx.workspaceId) ? row : null;
    if (!visible || !code) {
      const error = code
        ? "No code like that is waiting. Check it against the command line, or run the command again for a new one."
        : "A code is eight letters, like BCDF-GHJK.";
      return c.html(<DevicePage ctx={ctx} device={null} typed={typed} error={error} notice={notice} />, code ? 404 : 400);
    }
    return c.html(<DevicePage ctx={ctx} device={view(visible, code, Date.now())} typed={typed} error={null} notice={notice} />);
  })
  .post(`${DEVICE_PAGE}/:id{[0-9a-f]{16}}/:action{approve|deny}`, async (c) => {
    const form = checkedForm(c);
    const row = await db(c.env)
      .select()
      .from(schema.deviceCodes)
      .where(eq(schema.deviceCodes.id, c.req.param("id")))
      .get();
    if (!row || (row.workspaceId !== null && row.workspaceId !== c.var.workspaceId)) throw notFound("code");
    const approve = c.req.param("action") === "approve";
    const scope = form.get("scope") === "admin" ? "admin" : "read";
    const now = Date.now();
    const decided = await decideDevice(c.env, row, { approve, workspaceId: c.var.workspaceId, tokenId: c.var.tokenId, scope }, now);
    return c.redirect(`${DEVICE_PAGE}?done=${decided ? (approve ? "approved" : "denied") : "late"}`, 303);
  });
