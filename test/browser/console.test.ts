// The operator console in a real browser (Debian's chromium, driven by playwright-core) against the
// real Worker under wrangler dev, with a fleet made by the real collector. Screenshots of each page
// go to docs/console/.
// biome-ignore-all lint/performance/useDomNodeTextContent: these are playwright locators, whose innerText is the rendered text a person reads, not a DOM property.
import { spawnSync } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runIdFor } from "../../protocol/index.ts";
import { type Computer, claudeSession, daemonUp, drained, enroll, eventually, newComputer, oxagen, runDaemon } from "../support/e2e.ts";
import { NODE, ROOT, TACHO } from "../support/recorder.ts";
import { d1Execute, type LocalWorker, startWorker } from "../support/worker.ts";
import { launchChromium } from "./chromium.ts";

const SHOTS = join(ROOT, "docs/console");
const AGENT = "stripe-refunds";
const SESSION = "refund-run-7";

let worker: LocalWorker;
let a: Computer; // a custom agent, recorded and delivered
let b: Computer; // codex wrapped (idle), Claude Code's hooks removed (degraded), an agent whose data waits (pending)
let c: Computer; // cursor wrapped, the collector silent (down)
let aHost: string;
let cHost: string;
const daemons: ReturnType<typeof runDaemon>[] = [];
let context: BrowserContext;
let page: Page;
let closeBrowser: (() => Promise<void>) | undefined;

function tachoIn(computer: Computer, cwd: string, args: string[]) {
  const r = spawnSync(NODE, [TACHO, ...args], { cwd, env: { ...computer.env, DISPLAY: "", WAYLAND_DISPLAY: "" }, encoding: "utf8" });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function hook(computer: Computer, session: string, event: Record<string, unknown>, agent = AGENT) {
  return computer.hook(["--agent", agent], { session_id: session, ...event });
}

async function shot(name: string) {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/** Every visible form control has a label (or aria-label); answers those that do not. */
async function unlabelled(): Promise<string[]> {
  return page.evaluate(() =>
    Array.from(document.querySelectorAll("input, select, textarea, button"))
      .filter((el) => (el as HTMLInputElement).type !== "hidden")
      .filter((el) => {
        const control = el as HTMLInputElement;
        if (el.tagName === "BUTTON") return (el.textContent ?? "").trim() === "";
        return (control.labels?.length ?? 0) === 0 && !el.getAttribute("aria-label");
      })
      .map((el) => el.outerHTML.slice(0, 120)),
  );
}

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  worker = await startWorker();
  a = await newComputer();
  aHost = (await enroll(worker, a)).hostId;
  // B's recorder holds its batches back (a 10-minute ship delay), so what it records stays pending.
  b = await newComputer({ OXAGEN_SHIP_DELAY_MS: "600000", OXAGEN_REPORT_INTERVAL_MS: "1000" });
  await enroll(worker, b, ["claude-code", "codex"]);
  rmSync(join(b.env.CLAUDE_CONFIG_DIR!, "settings.json"));
  c = await newComputer();
  cHost = (await enroll(worker, c, ["cursor"])).hostId;
  for (const computer of [a, b]) {
    const d = runDaemon(computer);
    daemons.push(d);
    await daemonUp(computer);
  }
  // C never runs a recorder. "down" takes 15 minutes of silence; rather than wait, the test ages C's
  // last signed call in the Worker's D1 (the one thing here not made by the collector).
  d1Execute(worker, `UPDATE hosts SET last_seen_ms = ${Date.now() - 60 * 60_000} WHERE id = '${cHost}'`);
  ({ context, page, close: closeBrowser } = await launchChromium());
}, 300_000);

afterAll(async () => {
  await closeBrowser?.();
  for (const d of daemons) {
    d.proc.kill("SIGTERM");
    await d.exited;
  }
  await worker?.stop();
}, 120_000);

describe("the operator console in a browser", () => {
  let runId: string;

  it("Open Oxagen: tacho open gives the console address; a signed-out browser signs in by pasting a token, with the keyboard", async () => {
    const opened = tachoIn(a, a.home, ["open"]);
    expect(opened.status).toBe(0);
    expect(opened.stdout.trim()).toBe(`${worker.url}/console`);
    await page.goto(opened.stdout.trim());
    expect(new URL(page.url()).pathname).toBe("/console/sign-in");
    expect(await unlabelled()).toEqual([]);
    await shot("sign-in");
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Skip to content");
    await page.getByLabel("Operator token").focus();
    await page.keyboard.type(worker.token);
    await page.keyboard.press("Enter");
    await page.waitForURL(`${worker.url}/console`);
    expect(page.url()).not.toContain(worker.token);
    const cookies = await context.cookies(worker.url);
    const session = cookies.find((k) => k.name === "oxagen_session")!;
    expect(session).toMatchObject({ httpOnly: true, sameSite: "Strict" });
    expect(session.value).not.toContain(worker.token);
  });

  it("the Wrapped agents panel shows each of the six health states with its reason", async () => {
    // A: one custom-agent session, delivered.
    expect(hook(a, SESSION, { hook_event_name: "SessionStart", cwd: a.home })).toEqual({});
    hook(a, SESSION, { hook_event_name: "UserPromptSubmit", prompt: "refund the duplicate charge" });
    const pre = {
      hook_event_name: "PreToolUse",
      tool_name: "stripe_refund",
      tool_input: { command: "refund charge=ch_1" },
      tool_use_id: "t1",
    };
    hook(a, SESSION, pre);
    hook(a, SESSION, { ...pre, hook_event_name: "PostToolUse", tool_response: { refund: "re_1" } });
    hook(a, SESSION, { hook_event_name: "Stop" });
    // B: a nightly job recorded, held back by its recorder.
    hook(b, "nightly-1", { hook_event_name: "SessionStart", cwd: b.home }, "nightly-job");
    runId = runIdFor(aHost, AGENT, SESSION);
    await drained(a);
    const want = ["healthy", "pending", "degraded", "down", "idle", "not wrapped"];
    let seen = "";
    const states = await eventually(
      async () => {
        await page.goto(`${worker.url}/console`);
        seen = await page.locator("main").innerText();
        return want.every((s) => seen.includes(s)) && seen.includes("hooks are missing") ? seen : null;
      },
      "every health state on the panel",
      90_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; the panel said:\n${seen}`);
    });
    expect(states).toContain("runs recorded and delivered to Oxagen");
    expect(states).toContain("recorded, waiting to send");
    expect(states).toContain("the collector has not answered for over 15 minutes");
    expect(states).toContain("wrapped, no runs yet");
    expect(states).toContain("this name has never called the hook on this computer");
    expect(await unlabelled()).toEqual([]);
    await shot("wrapped-agents");
  });

  it("lists runs with filters, and tacho open --run opens the run of this directory's session", async () => {
    await page.goto(`${worker.url}/console/runs`);
    await page.getByLabel("Harness or agent").fill(AGENT);
    await page.getByLabel("Status").selectOption("live");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForURL(/status=live/);
    await expect.poll(() => page.locator(`a[href="/console/runs/${runId}"]`).count()).toBe(1);
    // The row says what an operator reads first: the outcome and why, the computer by name, the model calls.
    const row = await page.locator(`tr:has(a[href="/console/runs/${runId}"])`).innerText();
    expect(row).toContain("running");
    expect(row).toContain("no frame so far says the run failed or was stopped");
    expect(row).not.toContain(aHost);
    expect(await unlabelled()).toEqual([]);
    await shot("runs");
    const opened = tachoIn(a, a.home, ["open", "--run"]);
    expect(opened.stdout.trim()).toBe(`${worker.url}/console/runs/${runId}`);
    await page.goto(opened.stdout.trim());
    await expect.poll(() => page.locator("h1").innerText()).toContain(runId);
    const timeline = await page.locator("#timeline + table").innerText();
    for (const kind of ["agent_start", "turn_start", "tool_requested", "tool_call", "turn_end"]) expect(timeline).toContain(kind);
    expect(timeline).toContain("tool stripe_refund");
    expect(await unlabelled()).toEqual([]);
    await shot("run");
  });

  it("pausing the run refuses its next hook: the page answers once the computer's recorder applied it", async () => {
    await page.getByRole("button", { name: "Pause run" }).press("Enter");
    await page.waitForURL(/done=paused/);
    const notice = await page.getByRole("status").innerText();
    expect(notice).toContain("Paused");
    expect(notice).not.toContain("Not applied");
    // No wait: the next hook is refused.
    const answer = hook(a, SESSION, {
      ...{ hook_event_name: "PreToolUse", tool_name: "stripe_refund", tool_input: { command: "refund charge=ch_2" }, tool_use_id: "t2" },
    });
    expect(answer.hookSpecificOutput).toMatchObject({ permissionDecision: "deny" });
  });

  it("seals the run; its gaps and its coverage statement say what the record could not see", async () => {
    await page.getByRole("button", { name: "Seal run" }).click();
    await page.waitForURL(/done=sealed/);
    const gaps = await page.locator("#gaps + table").innerText();
    expect(gaps).toContain("unobserved_tail");
    await shot("run-sealed");
    await page.getByRole("link", { name: "Coverage statement" }).click();
    const text = await page.locator("main").innerText();
    expect(text).toContain(`custom agent ${AGENT}`);
    expect(text).toContain("The record holds no model call, so it shows no spend.");
    expect(text).toContain("Every step the agent did not call tacho hook around");
    expect(text).toContain("unobserved_tail");
    await shot("coverage");
    const api = (await (await worker.api(`/v1/runs/${runId}/coverage`)).json()) as { statement: { summary: string } };
    expect(text).toContain(api.statement.summary);
  });

  it("exports the run; the download verifies with the oxagen verify line the page shows", async () => {
    await page.goto(`${worker.url}/console/runs/${runId}`);
    const line = (await page.locator("#verify + p + pre").innerText()).trim();
    const [, file, key] = /^oxagen verify (\S+) --server-key ([0-9a-f]{64})$/.exec(line)!;
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("link", { name: "Export bundle" }).click()]);
    expect(download.suggestedFilename()).toBe(file);
    const saved = join(a.home, file!);
    await download.saveAs(saved);
    const verified = oxagen(a, ["verify", saved, "--server-key", key!]);
    // Sealed with an unobserved tail: valid, and incomplete by its own gap.
    expect(verified.status).toBe(3);
    expect(verified.stdout).toContain("result: VALID BUT INCOMPLETE (exit 3)");
    expect(verified.stdout).toContain("Coverage statement");
    expect(verified.stdout).toContain(`custom agent ${AGENT}`);
  });

  it("Spend: the runs' spend charted by day, by agent and computer, and each budget clause's use against its limit", async () => {
    const budgets = [
      { id: "team-daily", scope: "workspace", window: "day", limit_microusd: 5_000_000 },
      { id: "per-run", scope: "run", window: "run", limit_microusd: 4000 },
      { id: "per-computer", scope: "host", window: "month", limit_microusd: 20_000_000 },
    ];
    const put = await worker.api(`/v1/workspaces/${worker.workspace}/policy`, {
      method: "PUT",
      body: JSON.stringify({
        mode: "enforce",
        tools: [],
        default_tool_decision: "none",
        models: null,
        budgets,
        retention: { mode: "keep", keep: ["prompt"] },
      }),
    });
    expect(put.status).toBe(200);
    // A Claude Code session on A whose transcript holds one model call the server prices at $0.0045.
    const session = "spend-1";
    const claude = claudeSession(a, session, { model: "claude-sonnet-4-5", usage: { input_tokens: 1000, output_tokens: 100 } });
    const spendRun = runIdFor(aHost, "claude-code", session);
    // Once the hook refuses the run's next step, its recorder holds the policy that says so: no push is still on its way.
    await eventually(async () => {
      const answer = claude("PreToolUse", { tool_name: "Bash", tool_input: { command: "ls" }, tool_use_id: "b1" });
      return (answer.hookSpecificOutput as { permissionDecision?: string } | undefined)?.permissionDecision === "deny";
    }, "the per-run budget refusal to reach the hook");
    // The Spend page reads D1's daily spend rollup, a projection a few seconds behind the budget counters that refused the step.
    const text = await eventually(async () => {
      await page.goto(`${worker.url}/console/spend`);
      const t = await page.locator("main").innerText();
      // Only agents and computers with priced calls in the period are listed (the custom agent's runs hold none).
      return /By harness or agent\nHarness or agent\tRuns\tSpend\nclaude-code\t1\t\$0\.0045\n/.test(t) ? t : null;
    }, "the run's spend on the Spend page");
    expect(text).not.toContain(AGENT);
    expect(text).toContain(`By computer\nComputer\tRuns\tSpend\n${aHost}\t1\t$0.0045\n`);
    expect(text).toContain("By model");
    const chart = page.getByRole("img", { name: /^Spend by day, .* \(UTC\): \$0\.0045 in all$/ });
    expect(await chart.count()).toBe(1);
    const budgetTable = page.locator("#budgets + table");
    const row = (clause: string) => budgetTable.locator(`tr:has(th:text-matches("^${clause}:"))`);
    expect(await row("per-run").innerText()).toMatch(
      new RegExp(`${spendRun}\\s+\\$0\\.0045\\s+\\$0\\.0040\\s+112%\\s+exhausted\\s+when the run ends`),
    );
    expect(await row("team-daily").innerText()).toMatch(/the workspace\s+\$0\.0045\s+\$5\.00\s+0%\s+within\s+\d{4}-\d\d-\d\d 00:00:00Z/);
    expect(await row("per-computer").innerText()).toMatch(new RegExp(`${aHost}\\s+\\$0\\.0045\\s+\\$20\\.00\\s+0%\\s+within`));
    const meter = page.getByRole("meter", { name: new RegExp(`^per-run: .*${spendRun}: 112% of the limit$`) });
    expect(await meter.getAttribute("value")).toBe("4000");
    // The API answers the same figures the page shows.
    const api = (await (await worker.api("/v1/spend/budgets")).json()) as {
      clauses: { budget: string; uses: { spent_microusd: number }[] }[];
    };
    expect(api.clauses.map((c) => [c.budget, c.uses[0]?.spent_microusd])).toEqual([
      ["team-daily", 4500],
      ["per-run", 4500],
      ["per-computer", 4500],
    ]);
    expect(await unlabelled()).toEqual([]);
    await shot("spend");
    await page.goto(`${worker.url}/console/runs/${spendRun}`);
    expect(await page.locator("#run-budgets + table").innerText()).toContain("exhausted");
  });

  it("pauses an agent on its computer: its next session is stopped; resuming lets it start", async () => {
    await page.goto(`${worker.url}/console`);
    await page.getByRole("button", { name: new RegExp(`^Pause ${AGENT} on .* \\(${aHost}\\)$`) }).click();
    await page.waitForURL(/\/console\?done=agent_paused$/);
    expect(await page.locator(`section:has(h2:has-text("${aHost}")) tr:has-text("${AGENT}")`).innerText()).toContain("on this computer");
    expect(hook(a, "after-pause", { hook_event_name: "SessionStart", cwd: a.home })).toMatchObject({ continue: false });
    await page.getByRole("button", { name: new RegExp(`^Resume ${AGENT} on .* \\(${aHost}\\)$`) }).click();
    await page.waitForURL(/\/console\?done=agent_resumed$/);
    expect(hook(a, "after-resume", { hook_event_name: "SessionStart", cwd: a.home })).toEqual({});
  });

  it("Computers: suspends one, and shows a new enrollment token's tacho enroll line once", async () => {
    await page.goto(`${worker.url}/console/computers`);
    expect(await page.locator("main table").innerText()).toContain(cHost);
    await page.getByRole("button", { name: new RegExp(`^Suspend .* \\(${cHost}\\)$`) }).click();
    // C runs no recorder: the page says the suspension has not reached it yet.
    await page.waitForURL(/\/console\/computers\?done=suspended&late=/);
    expect(await page.getByRole("status").innerText()).toContain(`(${cHost}) is offline: it applies the change when it connects again`);
    expect(await page.locator(`tr:has-text("${cHost}")`).innerText()).toContain("suspended");
    expect((await (await worker.api(`/v1/hosts/${cHost}`)).json()) as object).toMatchObject({ status: "suspended" });
    await page.getByLabel("Token valid for (minutes)").fill("15");
    await page.getByRole("button", { name: "Make an enrollment token" }).click();
    const enrollLine = await page.locator("[role=status] pre").innerText();
    expect(enrollLine).toMatch(
      new RegExp(`^tacho enroll --server ${worker.url} --token oxe_[0-9a-f]{16}_[0-9a-f]{48} --workspace ${worker.workspace} --harness`),
    );
    expect(await unlabelled()).toEqual([]);
    await shot("computers");
    await page.goto(`${worker.url}/console/computers`);
    expect(await page.content()).not.toContain(enrollLine.split(" ")[4]!);
  });

  it("Computers: removes one after a confirmation page; it moves to the removed list", async () => {
    await page.goto(`${worker.url}/console/computers`);
    await page.getByRole("link", { name: new RegExp(`^Remove .* \\(${cHost}\\)$`) }).click();
    await page.waitForURL(`${worker.url}/console/computers/${cHost}/remove`);
    expect(await page.locator("h1").innerText()).toContain(cHost);
    expect(await unlabelled()).toEqual([]);
    await page.getByRole("button", { name: new RegExp(`^Remove .* \\(${cHost}\\) for good$`) }).click();
    await page.waitForURL(/\/console\/computers\?done=removed$/);
    expect(await page.getByRole("status").innerText()).toContain("Removed: the computer is unenrolled");
    expect((await (await worker.api(`/v1/hosts/${cHost}`)).json()) as object).toMatchObject({ status: "unenrolled" });
    expect(await page.locator("details summary").innerText()).toBe("Removed computers (1)");
  });

  it("Policy: clauses are fields; every mistake is refused at once next to its field in a sentence; a change is saved and signed", async () => {
    await page.goto(`${worker.url}/console/policy`);
    expect(await page.locator("main").innerText()).not.toContain("issue 12");
    await page.getByRole("button", { name: "Add a tool clause" }).click();
    await page.getByLabel("Tool clause 1: tool").fill("Bash");
    await page.getByLabel("Tool clause 1: command").fill("git push --force*");
    await page.getByRole("button", { name: "Add a budget" }).click();
    await page.getByLabel("Budget 4: id").fill("per-run");
    await page.getByLabel("Budget 4: limit in dollars").fill("ten dollars");
    await page.getByLabel("OpenAI base URL").fill("https://user:secret@proxy.example.com");
    await page.getByRole("button", { name: "Save and sign the policy" }).first().click();
    expect(await page.getByRole("alert").innerText()).toBe("The policy was not changed: 4 fields need a change, each marked below.");
    const idField = page.getByLabel("Tool clause 1: id");
    expect(await page.locator(`#${await idField.getAttribute("aria-describedby")}`).innerText()).toBe(
      "Give the clause an id, such as no-force-push.",
    );
    expect(await page.locator("#err-budgets-3-limit").innerText()).toBe("Write the limit in dollars, such as 25 or 0.50.");
    expect(await page.locator("#err-budgets-3-id").innerText()).toBe("Another budget above has this id: each budget needs its own.");
    expect(await page.locator("#err-upstreams-openai").innerText()).toContain("no user name, password");
    await shot("policy-error");
    await idField.fill("no-force-push");
    await page.getByLabel("Tool clause 1: reason").fill("no force pushes");
    await page.getByRole("button", { name: "Remove budget 4" }).click();
    await page.getByLabel("OpenAI base URL").fill("https://llm-proxy.example.com/openai");
    // Enter in a field saves (Save is the form's first button).
    await page.getByLabel("OpenAI base URL").press("Enter");
    expect(await page.getByRole("status").innerText()).toContain("Saved");
    expect(await page.locator("main").innerText()).toContain("no-force-push");
    const api = (await (await worker.api(`/v1/workspaces/${worker.workspace}/policy`)).json()) as {
      policy: { tools: unknown; upstreams: unknown; budgets: unknown[] };
    };
    expect(api.policy.tools).toEqual([
      { id: "no-force-push", tool: "Bash", command: "git push --force*", decision: "deny", reason: "no force pushes" },
    ]);
    expect(api.policy.upstreams).toEqual({ openai: "https://llm-proxy.example.com/openai" });
    expect(api.policy.budgets).toHaveLength(3);
    expect(await unlabelled()).toEqual([]);
    await shot("policy");
  });

  it("signing out ends the session: the console sends the browser back to sign-in", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(/\/console\/sign-in\?why=signed_out/);
    await page.goto(`${worker.url}/console/runs`);
    expect(new URL(page.url()).pathname).toBe("/console/sign-in");
  });
});
