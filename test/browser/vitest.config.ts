import path from "node:path";
import { defineConfig } from "vitest/config";

const root = path.join(import.meta.dirname, "../..");

// The console in Debian's chromium (apt-get install chromium), driven by playwright-core.
export default defineConfig({
  root,
  test: {
    name: "browser",
    dir: root,
    include: ["test/browser/**/*.test.ts"],
    testTimeout: 180_000,
    hookTimeout: 300_000,
  },
});
