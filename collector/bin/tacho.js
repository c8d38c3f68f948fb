#!/usr/bin/env node
// `tacho hook` runs on every agent step, so its path loads as little as possible: this entry and
// the client are CommonJS (bin/package.json: an ESM entry starts Node's ESM loader, a few ms), the
// client's builtins come through process.getBuiltinModule, and it skips main.ts and the TypeScript
// loader entirely.
// The Node check comes first and uses nothing newer than Node 16 (collector/bin/preflight.cjs).
const nodeModule = require("node:module");
const { nodeProblem, refuseHook, writeProbe } = require("./preflight.cjs");

async function tacho() {
  const [command, ...rest] = process.argv.slice(2);
  const problem = nodeProblem("tacho");
  const hook = command === "hook" && !rest.includes("--help") && !rest.includes("-h");
  if (hook && process.env.TACHO_HOOK_PROBE) {
    if (!problem) require("../commands/hook/client.cjs");
    writeProbe(process.env.TACHO_HOOK_PROBE, problem, __filename);
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
}

tacho();
