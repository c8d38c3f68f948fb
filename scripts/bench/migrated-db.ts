// D1's schema on node:sqlite (the engine D1 runs): an in-memory database with every migration of
// `root`'s migrations/ applied in order, as `wrangler d1 migrations apply` applies them.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";

export function migratedDb(root: string): DatabaseSync {
  const db = new DatabaseSync(":memory:");
  const dir = join(root, "migrations");
  for (const f of readdirSync(dir)
    .filter((f) => f.endsWith(".sql"))
    .sort())
    for (const q of readFileSync(join(dir, f), "utf8").split("--> statement-breakpoint")) db.exec(q);
  return db;
}
