// Enrolling by signing in, end to end: the real `tacho enroll` (no token) against the real Worker
// under wrangler dev, its code approved or denied through the console in Debian's chromium.
// biome-ignore-all lint/performance/useDomNodeTextContent: these are playwright locators, whose innerText is the rendered text a person reads, not a DOM property.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { hostname, userInfo } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Computer, eventually, newComputer } from "../support/e2e.ts";
import { NODE, ROOT, TACHO } from "../support/recorder.ts";
import { d1Execute, type LocalWorker, startWorker } from "../support/worker.ts";
import { launchChromium } from "./chromium.ts";

let worker: LocalWorker;
let page: Page;
let closeBrowser: (() => Promise<void>) | undefined;
let readToken: string;
const running: ChildProcess[] = [];

/** `tacho enroll --server URL --print` on a computer, running: its code, its output, its exit. */
function enrollBySigningIn(computer: Computer, extra: string[] = []) {
  const args = ["enroll", "--server", worker.url, "--print", "--no-start", "--json"];
  args.push("--hooks-port", String(computer.port), "--gateway-port", String(computer.gatewayPort), ...extra);
  // No display: nothing may try to open a browser on this computer.
  const proc = spawn(NODE, [TACHO, ...args], { env: { ...computer.env, DISPLAY: "", WAYLAND_DISPLAY: "" } });
  running.push(proc);
  let stdout = "";
  let stderr = "";
  proc.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  proc.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((r) => proc.on("exit", (code) => r(code)));
  const shown = eventually(async () => {
    const url = /(http:\/\/\S+\/console\/device\?code=[A-Z]{4}-[A-Z]{4})/.exec(stderr)?.[1];
    const key = /host key ([0-9a-f]{16})/.exec(stderr)?.[1];
    return url && key ? { url, key } : null;
  }, "the code on stderr");
  return { proc, shown, exited, out: () => ({ stdout, stderr }) };
}

async function signInAs(token: string) {
  await page.getByLabel("Operator token").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(/\/console\/device\?code=/);
}

/** Opens a code's page, signing in on the way when the browser is signed out. */
async function openCode(url: string, token = worker.token) {
  await page.goto(url);
  if (new URL(page.url()).pathname === "/console/sign-in") await signInAs(token);
  expect(page.url()).toBe(url);
  return page.locator("main").innerText();
}

const approveButton = () => page.getByRole("button", { name: /^Approve/ });

beforeAll(async () => {
  worker = await startWorker();
  const minted = await worker.api("/v1/tokens", { method: "POST", body: JSON.stringify({ name: "viewer", scope: "read" }) });
  readToken = ((await minted.json()) as { token: string }).token;
  ({ page, close: closeBrowser } = await launchChromium());
}, 300_000);

afterAll(async () => {
  for (const p of running) if (p.exitCode === null) p.kill("SIGKILL");
  await closeBrowser?.();
  await worker?.stop();
}, 120_000);

describe("tacho enroll by signing in", () => {
  let approvedUrl = "";

  it("approve: the page shows the computer, its user, OS, harnesses and key; the CLI then enrolls as with a token", async () => {
    const computer = await newComputer();
    const cli = enrollBySigningIn(computer, ["--harness", "claude-code,codex"]);
    const { url, key } = await cli.shown;
    expect(existsSync(join(computer.env.OXAGEN_HOME!, "host.json"))).toBe(false);
    const main = await openCode(url);
    for (const shown of [hostname(), userInfo().username, process.platform === "linux" ? "Linux" : "", "claude-code, codex", key])
      expect(main).toContain(shown);
    await page.screenshot({ path: join(ROOT, "docs/console/device.png"), fullPage: true });
    await approveButton().click();
    await page.waitForURL(/done=approved/);
    expect(await cli.exited, JSON.stringify(cli.out())).toBe(0);
    const result = JSON.parse(cli.out().stdout) as { host_id: string; workspace: string; key_id: string };
    expect(result).toMatchObject({ workspace: worker.workspace, key_id: key });
    const host = JSON.parse(readFileSync(join(computer.env.OXAGEN_HOME!, "host.json"), "utf8")) as { host_id: string; harnesses: string[] };
    expect(host).toMatchObject({ host_id: result.host_id, harnesses: ["claude-code", "codex"] });
    const hosts = (await (await worker.api("/v1/hosts")).json()) as { hosts: { id: string; key_id: string }[] };
    expect(hosts.hosts).toContainEqual(expect.objectContaining({ id: result.host_id, key_id: key }));
    approvedUrl = url;
  });

  it("a code used twice: the page says it was used and offers nothing to approve", async () => {
    const main = await openCode(approvedUrl);
    expect(main).toContain("This code was used");
    expect(await approveButton().count()).toBe(0);
  });

  it("deny: the CLI stops and nothing is written", async () => {
    const computer = await newComputer();
    const cli = enrollBySigningIn(computer, ["--harness", "claude-code"]);
    const { url } = await cli.shown;
    await openCode(url);
    await page.getByRole("button", { name: "Deny" }).click();
    await page.waitForURL(/done=denied/);
    expect(await cli.exited).toBe(1);
    expect(cli.out().stderr).toContain("denied");
    expect(existsSync(join(computer.env.OXAGEN_HOME!, "host.json"))).toBe(false);
    expect(existsSync(join(computer.env.CLAUDE_CONFIG_DIR!, "settings.json"))).toBe(false);
  });

  it("an expired code: the page offers nothing to approve and the CLI stops without enrolling", async () => {
    const computer = await newComputer();
    const cli = enrollBySigningIn(computer);
    const { url } = await cli.shown;
    // Ten minutes are not waited for: the pending code's expiry is moved into the past.
    d1Execute(worker, "UPDATE device_codes SET expires_ms = 1 WHERE status = 'pending'");
    const main = await openCode(url);
    expect(main).toContain("expired");
    expect(await approveButton().count()).toBe(0);
    expect(await cli.exited).toBe(1);
    expect(cli.out().stderr).toContain("expired");
    expect(existsSync(join(computer.env.OXAGEN_HOME!, "host.json"))).toBe(false);
  });

  it("a read-only token sees the request but cannot approve it; the CLI keeps waiting", async () => {
    const computer = await newComputer();
    const cli = enrollBySigningIn(computer);
    const { url } = await cli.shown;
    await openCode(url);
    // Switch to the read-only token through the page's own way to another sign-in.
    await page.getByRole("button", { name: "Sign in to another workspace" }).click();
    await page.waitForURL(/\/console\/sign-in/);
    await signInAs(readToken);
    const main = await page.locator("main").innerText();
    expect(main).toContain(hostname());
    expect(main).toContain("may only read");
    expect(await approveButton().count()).toBe(0);
    expect(await page.getByRole("button", { name: "Deny" }).count()).toBe(0);
    // Two polls after that view find the code still pending: the second is sent only by a CLI that
    // read the first answer as "keep waiting", so a CLI that stopped at it fails here, not by timing.
    const lastPoll = () => {
      const out = d1Execute(
        worker,
        "SELECT status, last_poll_ms FROM device_codes WHERE hostname IS NOT NULL ORDER BY created_ms DESC LIMIT 1",
      );
      return { status: /"status":\s*"(\w+)"/.exec(out)?.[1], at: Number(/"last_poll_ms":\s*(\d+)/.exec(out)?.[1] ?? 0) };
    };
    const viewed = Date.now();
    const first = await eventually(async () => {
      const seen = lastPoll();
      return seen.at > viewed ? seen : null;
    }, "a poll after the read-only view");
    expect(first.status).toBe("pending");
    const second = await eventually(async () => {
      if (cli.proc.exitCode !== null) return { status: "the CLI exited", at: 0 };
      const seen = lastPoll();
      return seen.at > first.at ? seen : null;
    }, "a second poll, or the CLI's exit");
    expect(second.status, cli.out().stderr).toBe("pending");
    expect(cli.proc.exitCode, cli.out().stderr).toBeNull();
    expect(existsSync(join(computer.env.OXAGEN_HOME!, "host.json"))).toBe(false);
    // An admin ends it.
    await page.getByRole("button", { name: "Sign in to another workspace" }).click();
    await signInAs(worker.token);
    await page.getByRole("button", { name: "Deny" }).click();
    expect(await cli.exited).toBe(1);
  });
});
