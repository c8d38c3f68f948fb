// `npm run demo` against the real Worker: it ends VALID, exit 0, and leaves no key, state or policy behind.
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NODE, ROOT } from "../../support/recorder.ts";
import { startWorker, type LocalWorker } from "../../support/worker.ts";

let worker: LocalWorker;

beforeAll(async () => {
  worker = await startWorker();
});

afterAll(async () => {
  await worker?.stop();
});

/** Every file under a folder, as paths relative to it. */
function files(dir: string, under = ""): string[] {
  return readdirSync(join(dir, under), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(dir, join(under, e.name)) : [join(under, e.name)],
  );
}

describe("npm run demo", () => {
  it("verifies its bundle as VALID (exit 0), then unenrolls the throwaway computer, deletes its state and restores the policy", async () => {
    const before = await (await worker.api(`/v1/workspaces/${worker.workspace}/policy`)).json();
    const temp = mkdtempSync(join(tmpdir(), "demo-test-"));
    const demo = spawn(NODE, [join(ROOT, "scripts/demo.ts")], {
      env: { ...process.env, OXAGEN_URL: worker.url, OXAGEN_DEV_STATE: join(worker.persist, "oxagen-dev.json"), TMPDIR: temp },
    });
    let stdout = "";
    let stderr = "";
    demo.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    demo.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => demo.on("close", resolve));
    expect(code, `${stdout}\n${stderr}`).toBe(0);
    expect(stdout).toContain("result: VALID (exit 0)");
    expect(stdout).toContain("token_denied     stripe_refund · refunds over $100 need a person");
    // Only the bundle and the server's public key remain: no host key, journal, body or spool.
    const left = files(temp).filter((f) => f.startsWith("oxagen-"));
    expect(left.map((f) => f.split("/").pop()).sort()).toEqual(["bundle.jsonl", "server-key.pub"]);
    expect(left.some((f) => f.includes("host.json"))).toBe(false);
    // The throwaway computer left the fleet.
    const { hosts } = (await (await worker.api("/v1/hosts")).json()) as { hosts: { status: string }[] };
    expect(hosts.map((h) => h.status)).toEqual(["unenrolled"]);
    // The clause the demo added is gone again.
    const after = await (await worker.api(`/v1/workspaces/${worker.workspace}/policy`)).json();
    expect(after.policy.tools).toEqual(before.policy.tools);
    rmSync(temp, { recursive: true, force: true });
  }, 180_000);
});
