#!/usr/bin/env node
// The Node check comes first and uses nothing newer than Node 16 (collector/bin/preflight.cjs).
const nodeModule = process.getBuiltinModule?.("node:module") ?? (await import("node:module")).default;
const { nodeProblem } = nodeModule.createRequire(import.meta.url)("./preflight.cjs");

const problem = nodeProblem("oxagen");
if (problem) {
  process.stderr.write(`${problem}\n`);
  process.exitCode = 2;
} else {
  nodeModule.enableCompileCache?.();
  const { main } = await import("../main.ts");
  process.exitCode = await main("oxagen", process.argv.slice(2));
}
