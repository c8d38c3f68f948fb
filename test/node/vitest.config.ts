import path from "node:path";
import { defineConfig } from "vitest/config";

const root = path.join(import.meta.dirname, "../..");

export default defineConfig({
  root,
  test: {
    name: "node",
    dir: root,
    include: ["test/protocol/**/*.test.ts", "test/node/**/*.test.ts", "examples/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
