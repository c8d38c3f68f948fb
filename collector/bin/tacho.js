#!/usr/bin/env node
// `tacho hook` runs on every agent step, so its path loads as little as possible: builtins through
// process.getBuiltinModule and a CommonJS client through require (an ESM import of each costs
// several milliseconds at start); it skips main.ts and the TypeScript loader entirely.
const { createRequire, enableCompileCache } = process.getBuiltinModule("node:module");

enableCompileCache?.();
if (process.argv[2] === "hook") {
  await createRequire(import.meta.url)("../hook-fast/client.cjs").runHook(process.argv.slice(3));
} else {
  const { main } = await import("../main.ts");
  process.exitCode = await main("tacho", process.argv.slice(2));
}
