import path from "node:path";
import { defineConfig } from "vitest/config";

const root = path.join(import.meta.dirname, "../..");

// The real Claude Code and Codex CLIs: test/harnesses/package.json, installed by setup.ts on first use.
export default defineConfig({
  root,
  test: {
    name: "harnesses",
    dir: root,
    include: ["test/harnesses/**/*.test.ts"],
    globalSetup: [path.join(import.meta.dirname, "setup.ts")],
    testTimeout: 300_000,
    hookTimeout: 300_000,
  },
});
