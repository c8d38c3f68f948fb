import { app } from "./app.ts";
import { scheduled } from "./cron.ts";
import { useNativeCrypto } from "./native-crypto.ts";
import { consumeProjection } from "./projection/consume.ts";
import type { ProjectionMessage } from "./projection/messages.ts";

useNativeCrypto();

export { ChainObject } from "./chain-object.ts";
export { HostObject } from "./host-object.ts";
export { WorkspaceObject } from "./workspace-object.ts";

export default {
  fetch: app.fetch,
  scheduled,
  queue: consumeProjection,
} satisfies ExportedHandler<Env, ProjectionMessage>;
