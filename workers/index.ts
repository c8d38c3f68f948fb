import { app } from "./app.ts";
import { scheduled } from "./cron.ts";

export { ChainObject } from "./chain-object.ts";

export default {
  fetch: app.fetch,
  scheduled,
} satisfies ExportedHandler<Env>;
