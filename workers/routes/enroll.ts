import { and, eq, gt, isNull, sql } from "drizzle-orm";
import { Hono } from "hono";
import { AgentName, bytesToHex, EnrollRequest, fromHex, keyIdFor, publicKeyProblem, ROUTES } from "../../protocol/index.ts";
import type { AppEnv } from "../request-body.ts";
import { db, schema } from "../db/client.ts";
import { insertWhere } from "../db/insert-where.ts";
import { AppError } from "../errors.ts";
import { signingKey } from "../keys.ts";
import { agentKind } from "../lib/health.ts";
import { newId, parseToken, secretMatches } from "../lib/tokens.ts";
import { valid } from "../validate.ts";

const badToken = () => new AppError(401, "invalid_token", "The enrollment token is unknown, expired, revoked or already used.");

export const enroll = new Hono<AppEnv>().post(ROUTES.enroll, valid("json", EnrollRequest), async (c) => {
  const req = c.req.valid("json");
  const badNames = req.harnesses.filter((h) => !AgentName.safeParse(h).success);
  if (badNames.length > 0) throw new AppError(400, "invalid_request", `Not a harness or agent name: ${badNames.join(", ")}.`);
  const publicKey = fromHex(req.public_key, 32);
  const keyProblem = publicKeyProblem(publicKey);
  if (keyProblem) throw new AppError(400, "bad_public_key", `The host key is refused: ${keyProblem}.`);
  const parsed = parseToken(req.token, "oxe");
  if (!parsed) throw badToken();
  const d = db(c.env);
  const et = schema.enrollmentTokens;
  const row = await d.select().from(et).where(eq(et.id, parsed.id)).get();
  const now = Date.now();
  if (!row || !secretMatches(parsed.secret, row.secretHash) || row.usedMs !== null || row.revokedMs !== null || row.expiresMs <= now)
    throw badToken();
  // A token an approved device code minted enrolls only the key the computer asked with.
  if (row.publicKey !== null && row.publicKey !== req.public_key)
    throw new AppError(401, "invalid_token", "The enrollment token is bound to another host key (the one its device code was asked with).");
  const hostId = newId("h-");
  // A token issued at an agent's registration wraps that agent on the host it enrolls.
  const names = [...new Set([...req.harnesses, ...(row.agent !== null ? [row.agent] : [])])];
  // One transaction: the token is spent only with the host written. Of two racing enrollments only
  // one spends it, and the host and its agents are written only where it was this one.
  const spentHere = sql`EXISTS (SELECT 1 FROM ${et} WHERE ${and(eq(et.id, row.id), eq(et.usedBy, hostId))})`;
  const spend = d
    .update(et)
    .set({ usedMs: now, usedBy: hostId })
    .where(and(eq(et.id, row.id), isNull(et.usedMs), isNull(et.revokedMs), gt(et.expiresMs, now)))
    .toSQL();
  const [spent] = await c.env.DB.batch([
    c.env.DB.prepare(spend.sql).bind(...spend.params),
    insertWhere(
      c.env,
      schema.hosts,
      {
        id: hostId,
        workspaceId: row.workspaceId,
        publicKey: req.public_key,
        keyId: keyIdFor(publicKey),
        hostname: req.hostname,
        status: "active",
        enrolledMs: now,
        lastSeenMs: now,
      },
      spentHere,
    ),
    ...names.map((name) =>
      insertWhere(
        c.env,
        schema.agents,
        { hostId, name, workspaceId: row.workspaceId, kind: agentKind(name), wrappedMs: now, createdMs: now },
        spentHere,
      ),
    ),
  ]);
  if (spent?.meta.changes !== 1) throw badToken();
  const key = await signingKey(c.env);
  return c.json({ host_id: hostId, workspace: row.workspaceId, server_key: { pub: bytesToHex(key.pub), key_id: key.keyId } }, 201);
});
