#!/usr/bin/env node
import module from "node:module";

const [major, minor] = process.versions.node.split(".").map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  process.stderr.write(
    `oxagen needs Node 22.18 or later (this is ${process.version}); run it through npm/npx in the project, which use node_modules/.bin/node\n`,
  );
  process.exitCode = 2;
} else {
  module.enableCompileCache?.();
  const { main } = await import("../main.ts");
  process.exitCode = await main("oxagen", process.argv.slice(2));
}
