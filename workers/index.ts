import { app } from "./app.ts";
import { type ArchiveMessage, consumeArchive } from "./archive.ts";
import { scheduled } from "./cron.ts";
import { metered } from "./lib/meter.ts";
import { useNativeCrypto } from "./native-crypto.ts";
import { consumeProjection } from "./projection/consume.ts";
import type { ProjectionMessage } from "./projection/messages.ts";

useNativeCrypto();

export { ChainObject } from "./chain-object.ts";
export { HostObject } from "./host-object.ts";
export { PushHubObject } from "./push-hub-object.ts";
export { WorkspaceObject } from "./workspace-object.ts";

// Each entry point hands on its bindings counted under its name when the meter is on (lib/meter.ts).
export default {
  fetch: (request, env, ctx) => app.fetch(request, metered(env, "request"), ctx),
  scheduled: (controller, env, ctx) => scheduled(controller, metered(env, "cron"), ctx),
  queue: (batch, env, _ctx) =>
    batch.queue === "oxagen-archive"
      ? consumeArchive(batch as MessageBatch<ArchiveMessage>, metered(env, "archive"))
      : consumeProjection(batch as MessageBatch<ProjectionMessage>, metered(env, "projection")),
} satisfies ExportedHandler<Env, ProjectionMessage | ArchiveMessage>;
