import { DurableObject } from "cloudflare:workers";

/** Bump when the storage schema changes; migrations below run in order. */
const SCHEMA_VERSION = 1;

/** One run's chain (or one host's own chain): the only writer of it. */
export class ChainObject extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => this.#migrate());
  }

  #migrate(): void {
    const sql = this.ctx.storage.sql;
    sql.exec("CREATE TABLE IF NOT EXISTS _schema (version INTEGER NOT NULL)");
    const row = sql.exec<{ version: number }>("SELECT max(version) AS version FROM _schema").one();
    const version = row.version ?? 0;
    if (version < 1) {
      sql.exec(`CREATE TABLE frames (seq INTEGER PRIMARY KEY, t INTEGER NOT NULL, kind TEXT NOT NULL, payload TEXT NOT NULL, hash TEXT NOT NULL, received_ms INTEGER NOT NULL)`);
    }
    if (version < SCHEMA_VERSION) sql.exec("INSERT INTO _schema (version) VALUES (?)", SCHEMA_VERSION);
  }

  /** How many frames the chain holds. */
  count(): number {
    return this.ctx.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM frames").one().n;
  }
}
