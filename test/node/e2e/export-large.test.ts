// `oxagen export --verify` of a 100,000-frame run through the real Worker under wrangler dev. The
// run is built as the export bench builds it (test/support/sample-run.ts padded with tool calls,
// a lock every 100 frames, signed ingest batches of 5,000): the collector's hooks would take far
// longer to make as many frames. Its bodies are uploaded, so the bundle verifies complete.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useNodeCrypto } from "../../../collector/lib/node-crypto.ts";
import { OXAGEN } from "../../support/e2e.ts";
import { enrollSampleHost, shipSampleRun } from "../../support/large-run.ts";
import { NODE } from "../../support/recorder.ts";
import { type LocalWorker, startWorker } from "../../support/worker.ts";

const FRAMES = 100_000;
const _BATCH = 5000;
let worker: LocalWorker;
let runId: string;
let frames = 0;
const home = mkdtempSync(join(tmpdir(), "oxagen-operator-"));
const env = { ...process.env, HOME: home };

const ox = (args: string[]) => spawnSync(NODE, [OXAGEN, ...args], { env, encoding: "utf8", timeout: 600_000, maxBuffer: 1 << 28 });

beforeAll(async () => {
  useNodeCrypto();
  worker = await startWorker();
  const host = await enrollSampleHost(worker.url, worker.token, "big-run");
  ({ chain: runId, frames } = await shipSampleRun(worker.url, host, FRAMES));
  const login = ox(["login", "--server", worker.url, "--token", worker.token]);
  if (login.status !== 0) throw new Error(`oxagen login: ${login.stderr}`);
}, 900_000);

afterAll(() => worker?.stop());

describe("oxagen export --verify of a 100,000-frame run", () => {
  it("streams the bundle, downloads its bodies and verifies it complete against the pinned keys", () => {
    expect(frames).toBeGreaterThanOrEqual(FRAMES);
    const dir = mkdtempSync(join(tmpdir(), "oxagen-big-"));
    const r = ox(["export", runId, "-o", join(dir, "bundle.jsonl"), "--bodies", join(dir, "bodies"), "--verify", "--json"]);
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as {
      frames: number;
      bodies: { downloaded: number; missing: string[] };
      verify: { exit: number; result: string; summary: { frames: number; bodiesChecked: number } };
    };
    expect(out.frames).toBe(frames);
    expect(out.bodies).toMatchObject({ downloaded: 6, missing: [] });
    expect(readdirSync(join(dir, "bodies"))).toHaveLength(6);
    expect(out.verify).toMatchObject({ exit: 0, result: "valid", summary: { frames } });
    expect(out.verify.summary.bodiesChecked).toBeGreaterThan(0);
  }, 600_000);

  it("on a terminal, shows frames done of the total and the rate; piped, it stays quiet", () => {
    const dir = mkdtempSync(join(tmpdir(), "oxagen-big-"));
    const file = join(dir, "bundle.jsonl");
    // `script` gives the command a terminal; its output (stderr included) is the terminal's.
    const line = [NODE, OXAGEN, "export", runId, "-o", file, "--verify"].map((a) => `'${a}'`).join(" ");
    // The bar appears at once (not after a second), so what it shows does not depend on how fast this machine is.
    const tty = spawnSync("script", ["-qec", line, "/dev/null"], {
      env: { ...env, OXAGEN_PROGRESS_DELAY_MS: "0" },
      encoding: "utf8",
      timeout: 600_000,
      maxBuffer: 1 << 28,
    });
    expect(tty.status, tty.stdout).toBe(0);
    expect(tty.stdout).toMatch(new RegExp(`[\\d,]+ of ${frames.toLocaleString("en-US")} frames · [\\d,]+ frames/s`));
    expect(tty.stdout).toContain("result: VALID (exit 0)");
    const piped = spawnSync(NODE, [OXAGEN, "export", runId, "-o", file, "--verify"], {
      env: { ...env, OXAGEN_PROGRESS_DELAY_MS: "0" },
      encoding: "utf8",
      maxBuffer: 1 << 28,
    });
    expect(piped.status).toBe(0);
    expect(piped.stderr).toBe("");
  }, 600_000);
});
