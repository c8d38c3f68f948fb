import { app } from "./app.ts";
import { scheduled } from "./cron.ts";
import { useNativeCrypto } from "./native-crypto.ts";

useNativeCrypto();

export { ChainObject } from "./chain-object.ts";
export { WorkspaceObject } from "./workspace-object.ts";

export default {
  fetch: app.fetch,
  scheduled,
} satisfies ExportedHandler<Env>;
