import { and, eq, getTableColumns, gt, isNull, type SQL, sql } from "drizzle-orm";
import { SQLiteSyncDialect, type SQLiteTable } from "drizzle-orm/sqlite-core";
import { Hono } from "hono";
import { AgentName, bytesToHex, EnrollRequest, fromHex, keyIdFor, publicKeyProblem, ROUTES } from "../../protocol/index.ts";
import type { AppEnv } from "../request-body.ts";
import { db, schema } from "../db/client.ts";
import { AppError } from "../errors.ts";
import { signingKey } from "../keys.ts";
import { agentKind } from "../lib/health.ts";
import { newId, parseToken, secretMatches } from "../lib/tokens.ts";
import { valid } from "../validate.ts";

const dialect = new SQLiteSyncDialect();

/** `INSERT INTO table (…) SELECT … WHERE condition`: a row written only when the condition holds. */
function insertWhere<T extends SQLiteTable>(env: Env, table: T, values: T["$inferInsert"], condition: SQL): D1PreparedStatement {
  const columns = getTableColumns(table);
  const names = Object.keys(values).map((key) => sql.identifier(columns[key]!.name));
  const params = Object.values(values).map((v) => sql`${v}`);
  const q = dialect.sqlToQuery(
    sql`INSERT INTO ${table} (${sql.join(names, sql`, `)}) SELECT ${sql.join(params, sql`, `)} WHERE ${condition}`,
  );
  return env.DB.prepare(q.sql).bind(...q.params);
}

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
  const hostId = newId("h-");
  const names = [...new Set(req.harnesses)];
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
