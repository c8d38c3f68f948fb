import { drizzle } from "drizzle-orm/d1";
import * as schema from "./schema.ts";

/** The fleet database through drizzle. */
export function db(env: Pick<Env, "DB">) {
  return drizzle(env.DB, { schema });
}

/** One of {@link db}. */
export type Db = ReturnType<typeof db>;
export { schema };
