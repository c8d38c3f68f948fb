import { and, eq, isNull } from "drizzle-orm";
import { Hono } from "hono";
import { AgentName, bytesToHex, EnrollRequest, fromHex, keyIdFor, publicKeyProblem, ROUTES } from "../../protocol/index.ts";
import { db, schema } from "../db/client.ts";
import { AppError } from "../errors.ts";
import { serverKey } from "../keys.ts";
import { agentKind } from "../lib/health.ts";
import { newId, parseToken, secretMatches } from "../lib/tokens.ts";
import { valid } from "../validate.ts";
import type { AppEnv } from "../body.ts";

const badToken = () => new AppError(401, "invalid_token", "The enrollment token is unknown, expired or already used.");

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
  const row = await d.select().from(schema.enrollmentTokens).where(eq(schema.enrollmentTokens.id, parsed.id)).get();
  const now = Date.now();
  if (!row || !secretMatches(parsed.secret, row.secretHash) || row.usedMs !== null || row.expiresMs <= now) throw badToken();
  const hostId = newId("h-");
  // The conditional update is the single-use guarantee: of two racing enrollments only one changes the row.
  const used = await d
    .update(schema.enrollmentTokens)
    .set({ usedMs: now, usedBy: hostId })
    .where(and(eq(schema.enrollmentTokens.id, row.id), isNull(schema.enrollmentTokens.usedMs)))
    .run();
  if (used.meta.changes !== 1) throw badToken();
  const names = [...new Set(req.harnesses)];
  await d.batch([
    d.insert(schema.hosts).values({
      id: hostId,
      workspaceId: row.workspaceId,
      publicKey: req.public_key,
      keyId: keyIdFor(publicKey),
      hostname: req.hostname,
      status: "active",
      enrolledMs: now,
      lastSeenMs: now,
    }),
    ...names.map((name) =>
      d.insert(schema.agents).values({
        hostId,
        name,
        workspaceId: row.workspaceId,
        kind: agentKind(name),
        wrappedMs: now,
      }),
    ),
  ]);
  const key = serverKey(c.env);
  return c.json({ host_id: hostId, workspace: row.workspaceId, server_key: { pub: bytesToHex(key.pub), key_id: key.keyId } }, 201);
});
