import { getTableColumns, type SQL, sql } from "drizzle-orm";
import { SQLiteSyncDialect, type SQLiteTable } from "drizzle-orm/sqlite-core";

const dialect = new SQLiteSyncDialect();

/**
 * `INSERT INTO table (…) SELECT … WHERE condition`: a row written only when the condition holds,
 * so a batch can write it only where an earlier statement of the same transaction took effect.
 */
export function insertWhere<T extends SQLiteTable>(
  env: Pick<Env, "DB">,
  table: T,
  values: T["$inferInsert"],
  condition: SQL,
): D1PreparedStatement {
  const columns = getTableColumns(table);
  const names = Object.keys(values).map((key) => sql.identifier(columns[key]!.name));
  const params = Object.values(values).map((v) => sql`${v}`);
  const q = dialect.sqlToQuery(
    sql`INSERT INTO ${table} (${sql.join(names, sql`, `)}) SELECT ${sql.join(params, sql`, `)} WHERE ${condition}`,
  );
  return env.DB.prepare(q.sql).bind(...q.params);
}
