import { defineConfig } from "vitest/config";

// Vitest 4 projects do not inherit root test options: each project sets its own.
export default defineConfig({
  test: {
    projects: [
      "test/node/vitest.config.ts",
      "test/workers/vitest.config.ts",
      "test/harnesses/vitest.config.ts",
      "test/browser/vitest.config.ts",
    ],
  },
});
