/**
 * A Durable Object's storage schema, versioned. `PRAGMA user_version` is not available in Durable
 * Object SQLite, so the version lives in `_schema`; each step runs once, in order. Runs inside
 * blockConcurrencyWhile.
 */
export function migrateSteps(storage: DurableObjectStorage, steps: Record<number, string[]>, target: number): void {
  const sql = storage.sql;
  sql.exec("CREATE TABLE IF NOT EXISTS _schema (version INTEGER NOT NULL)");
  const version = sql.exec<{ version: number | null }>("SELECT max(version) AS version FROM _schema").one().version ?? 0;
  if (version >= target) return;
  storage.transactionSync(() => {
    for (let v = version + 1; v <= target; v++) {
      for (const statement of steps[v] ?? []) sql.exec(statement);
      sql.exec("INSERT INTO _schema (version) VALUES (?)", v);
    }
  });
}
