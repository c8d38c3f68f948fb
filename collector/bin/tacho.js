#!/usr/bin/env node
import module from "node:module";

module.enableCompileCache?.();
// `tacho hook` runs on every agent step: it skips main.ts (and the TypeScript loader) entirely.
if (process.argv[2] === "hook") {
  const { runHook } = await import("../hook-fast/client.js");
  await runHook(process.argv.slice(3));
} else {
  const { main } = await import("../main.ts");
  process.exitCode = await main("tacho", process.argv.slice(2));
}
