#!/usr/bin/env node
// The Node check comes first and uses nothing newer than Node 16 (collector/bin/preflight.cjs).
// CommonJS, as tacho.js (bin/package.json).
const nodeModule = require("node:module");
const { nodeProblem } = require("./preflight.cjs");

async function oxagen() {
  const problem = nodeProblem("oxagen");
  if (problem) {
    process.stderr.write(`${problem}\n`);
    process.exitCode = 2;
  } else {
    nodeModule.enableCompileCache?.();
    const { main } = await import("../main.ts");
    process.exitCode = await main("oxagen", process.argv.slice(2));
  }
}

oxagen();
