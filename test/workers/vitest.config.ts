import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

const root = path.join(import.meta.dirname, "../..");
// The RFC 8032 TEST 2 seed: the tests' server key. Set here too so wrangler's config check does not
// warn about the required secret on every test file.
const TEST_SIGNING_KEY = "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb";
process.env.OXAGEN_SIGNING_KEY ??= TEST_SIGNING_KEY;
// The tests' tool-credential key (any 32 bytes).
const TEST_TOOLS_KEY = "a5".repeat(32);
process.env.OXAGEN_TOOLS_KEY ??= TEST_TOOLS_KEY;

export default defineConfig(async () => ({
  root,
  plugins: [
    cloudflareTest({
      wrangler: { configPath: path.join(root, "wrangler.toml") },
      remoteBindings: false,
      miniflare: {
        bindings: {
          TEST_MIGRATIONS: await readD1Migrations(path.join(root, "migrations")),
          OXAGEN_SIGNING_KEY: TEST_SIGNING_KEY,
          OXAGEN_TOOLS_KEY: TEST_TOOLS_KEY,
          // The tests' upstreams listen on 127.0.0.1 (test/workers/upstreams.ts).
          OXAGEN_TOOLS_ALLOW_LOOPBACK: "1",
          // The origin the tests' hosts sign for (test/workers/support.ts BASE).
          OXAGEN_ORIGIN: "http://oxagen.test",
          // A connection that never acknowledges holds an operator's call this long.
          OXAGEN_PUSH_WAIT_MS: "3000",
        },
      },
    }),
  ],
  test: {
    name: "workers",
    dir: root,
    include: ["test/protocol/**/*.test.ts", "test/workers/**/*.test.ts"],
    setupFiles: [path.join(root, "test/workers/apply-migrations.ts")],
    globalSetup: [path.join(root, "test/workers/upstreams.ts")],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    teardownTimeout: 60_000,
  },
}));
