#!/usr/bin/env node
// `tacho hook` runs on every agent step, so its path loads as little as possible: builtins through
// process.getBuiltinModule and a CommonJS client through require (an ESM import of each costs
// several milliseconds at start); it skips main.ts and the TypeScript loader entirely.
// The Node check comes first and uses nothing newer than Node 16 (collector/bin/preflight.cjs).
const nodeModule = process.getBuiltinModule?.("node:module") ?? (await import("node:module")).default;
const require = nodeModule.createRequire(import.meta.url);
const { nodeProblem, refuseHook, writeProbe } = require("./preflight.cjs");

const [command, ...rest] = process.argv.slice(2);
const problem = nodeProblem("tacho");
const hook = command === "hook" && !rest.includes("--help") && !rest.includes("-h");
if (hook && process.env.TACHO_HOOK_PROBE) {
  if (!problem) require("../commands/hook/client.cjs");
  writeProbe(process.env.TACHO_HOOK_PROBE, problem, import.meta.filename ?? process.argv[1]);
} else if (problem && hook) {
  await refuseHook(rest, problem);
} else if (problem) {
  process.stderr.write(`${problem}\n`);
  process.exitCode = 2;
} else if (hook) {
  nodeModule.enableCompileCache?.();
  await require("../commands/hook/client.cjs").runHook(rest);
} else {
  nodeModule.enableCompileCache?.();
  const { main } = await import("../main.ts");
  process.exitCode = await main("tacho", process.argv.slice(2));
}
