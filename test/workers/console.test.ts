import { env } from "cloudflare:workers";
import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { eq } from "drizzle-orm";
import { BODY_HEADERS, bodyRef, ChainWriter } from "../../protocol/index.ts";
import { db, schema } from "../../workers/db/client.ts";
import { CSP } from "../../workers/console/index.tsx";
import worker from "../../workers/index.ts";
import { Browser, csrfOf, signedIn as signedInAs } from "./console-browser.ts";
import { BASE, enrollHost, hostCall, hostPolicyOf, ingest, op, projectSpend, seedWorkspace, TestRun, type TestHost } from "./support.ts";

const HOSTILE = `<script>alert("x")</script><img src=x onerror=alert(1)>`;
const LOCAL = "http://127.0.0.1:8787";

let token: string;
let workspaceId: string;
let host: TestHost;

beforeAll(async () => {
  ({ token, workspaceId } = await seedWorkspace());
  host = await enrollHost(token);
});

const signedIn = (operatorToken = token, base = BASE) => signedInAs(operatorToken, base);

describe("signing in and out", () => {
  it("sends a signed-out browser to sign-in, and / to the console", async () => {
    const b = new Browser();
    for (const path of [
      "/console",
      "/console/runs",
      "/console/policy",
      "/console/computers",
      "/console/runs/run_00000000000000000000000000000000",
    ]) {
      const res = await b.fetch(path);
      expect(res.status, path).toBe(303);
      expect(res.headers.get("location"), path).toBe("/console/sign-in");
    }
    const root = await b.fetch("/");
    expect(root.status).toBe(302);
    expect(root.headers.get("location")).toBe("/console");
  });

  it("sets a Secure, __Host- session cookie (HttpOnly, SameSite=Strict, expiring) and puts no token in the URL", async () => {
    const b = new Browser();
    const res = await b.signIn(token);
    expect(res.headers.get("location")).toBe("/console");
    const cookie = b.setCookies.find((c) => c.startsWith("__Host-oxagen_session="))!;
    expect(cookie).toMatch(/; HttpOnly/);
    expect(cookie).toMatch(/; Secure/);
    expect(cookie).toMatch(/; SameSite=Strict/);
    expect(cookie).toMatch(/; Path=\//);
    expect(Number(/Max-Age=(\d+)/.exec(cookie)?.[1])).toBe(12 * 60 * 60);
    expect(cookie).not.toContain(token);
    const rows = await db(env).select().from(schema.consoleSessions).all();
    expect(JSON.stringify(rows)).not.toContain(token.split("_")[2]);
    const { res: home, html } = await b.page("/console");
    expect(home.status).toBe(200);
    expect(html).toContain("Wrapped agents");
  });

  it("drops Secure only on a loopback address over plain HTTP (wrangler dev)", async () => {
    const b = new Browser(LOCAL);
    await b.signIn(token);
    const cookie = b.setCookies.find((c) => c.startsWith("oxagen_session="))!;
    expect(cookie).toMatch(/; HttpOnly/);
    expect(cookie).toMatch(/; SameSite=Strict/);
    expect(cookie).not.toMatch(/Secure/);
  });

  it("refuses a sign-in without its CSRF cookie and token, and a wrong token with a 401 page", async () => {
    const b = new Browser();
    const { html } = await b.page("/console/sign-in");
    const stranger = new Browser();
    expect((await stranger.fetch("/console/sign-in", { form: { csrf: Browser.csrf(html), token } })).status).toBe(403);
    expect((await b.fetch("/console/sign-in", { form: { csrf: "0".repeat(32), token } })).status).toBe(403);
    const wrong = await b.fetch("/console/sign-in", { form: { csrf: Browser.csrf(html), token: `${token.slice(0, -4)}0000` } });
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).toContain("A valid operator API token is required");
    expect(b.jar.has("__Host-oxagen_session")).toBe(false);
  });

  it("sign-out revokes the session: the same cookie sent again goes to sign-in", async () => {
    const b = await signedIn();
    const cookie = b.jar.get("__Host-oxagen_session")!;
    const res = await b.fetch("/console/sign-out", { form: { csrf: await csrfOf(b) } });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/console/sign-in?why=signed_out");
    const replay = new Browser();
    replay.jar.set("__Host-oxagen_session", cookie);
    const again = await replay.fetch("/console");
    expect(again.status).toBe(303);
    expect(again.headers.get("location")).toBe("/console/sign-in?why=signed_out");
  });

  it("the cron deletes revoked sessions at once and expired ones once they expire; a live one stays", async () => {
    const before = new Set((await db(env).select({ id: schema.consoleSessions.id }).from(schema.consoleSessions).all()).map((r) => r.id));
    const live = await signedIn();
    const out = await signedIn();
    await out.fetch("/console/sign-out", { form: { csrf: await csrfOf(out) } });
    const mine = async () =>
      (await db(env).select().from(schema.consoleSessions).all()).filter((r) => !before.has(r.id)).map((r) => r.revokedMs === null);
    expect((await mine()).sort()).toEqual([false, true]);
    const cron = async (scheduledTime: number) => {
      const ctx = createExecutionContext();
      await worker.scheduled(createScheduledController({ scheduledTime, cron: "*/5 * * * *" }), env, ctx);
      await waitOnExecutionContext(ctx);
    };
    await cron(Date.now());
    expect(await mine()).toEqual([true]);
    expect((await live.fetch("/console")).status).toBe(200);
    await cron(Date.now() + 12 * 60 * 60_000 + 60_000);
    expect(await mine()).toEqual([]);
    const gone = await live.fetch("/console");
    expect(gone.status).toBe(303);
    expect(gone.headers.get("location")).toBe("/console/sign-in");
  });

  it("a session dies with its operator token", async () => {
    const minted = (await (await op(token, "/v1/tokens", { json: { name: "short", scope: "admin" } })).json()) as {
      id: string;
      token: string;
    };
    const b = await signedIn(minted.token);
    expect((await b.fetch("/console")).status).toBe(200);
    expect((await op(token, `/v1/tokens/${minted.id}`, { method: "DELETE" })).status).toBe(200);
    const res = await b.fetch("/console");
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/console/sign-in?why=token");
  });

  it("serves every page with a strict CSP and no caching", async () => {
    const b = await signedIn();
    for (const path of ["/console/sign-in", "/console", "/console/runs", "/console/spend", "/console/computers", "/console/policy"]) {
      const res = await b.fetch(path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get("content-security-policy"), path).toBe(CSP);
      expect(res.headers.get("cache-control"), path).toBe("no-store");
      expect(res.headers.get("x-frame-options"), path).toBe("DENY");
    }
    expect(CSP).toContain("default-src 'none'");
    expect(CSP).not.toContain("unsafe");
  });
});

describe("escaping what computers send", () => {
  it("shows a hostile tool name, hostname, frame field and body as text, never as markup", async () => {
    await db(env).update(schema.hosts).set({ hostname: HOSTILE }).where(eq(schema.hosts.id, host.id));
    const run = new TestRun(host);
    run.start();
    const body = `ran ${HOSTILE} && echo done`;
    const tool = run.add("tool_requested", {
      path: "hook",
      tool_name: HOSTILE,
      input: { sha256: "0".repeat(64), size: 1 },
      bodies: [bodyRef("tool_input", body, true)],
    });
    run.add("telemetry_gap", { path: "recorder", cause: "other", detail: HOSTILE });
    expect((await ingest(host, [run.part()])).status).toBe(200);
    const sha = (JSON.parse(tool.payload) as { bodies: { sha256: string }[] }).bodies[0]!.sha256;
    const put = await hostCall(host, "PUT", `/v1/bodies/${sha}`, body, {
      "content-type": "application/octet-stream",
      [BODY_HEADERS.run]: run.chain,
      [BODY_HEADERS.role]: "tool_input",
    });
    expect(put.status).toBe(201);

    const b = await signedIn();
    const pages = [
      "/console",
      "/console/computers",
      `/console/runs/${run.chain}`,
      `/console/runs/${run.chain}/frames/1/bodies/0`,
      `/console/runs/${run.chain}/coverage`,
    ];
    for (const path of pages) {
      const { res, html } = await b.page(path);
      expect(res.status, path).toBe(200);
      expect(html, path).not.toContain("<script>");
      expect(html, path).not.toContain("<img src=x");
    }
    const { html } = await b.page(`/console/runs/${run.chain}`);
    expect(html).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;");
    const shown = (await b.page(`/console/runs/${run.chain}/frames/1/bodies/0`)).html;
    expect(shown).toContain("ran &lt;script&gt;");
    expect((await b.page("/console/computers")).html).toContain("&lt;img src=x onerror=alert(1)&gt;");
    await db(env).update(schema.hosts).set({ hostname: "box" }).where(eq(schema.hosts.id, host.id));
  });
});

describe("state-changing forms", () => {
  async function liveRun() {
    const run = new TestRun(host);
    run.start();
    await ingest(host, [run.part()]);
    return run;
  }
  const pausedRow = async (id: string) => (await db(env).select().from(schema.runs).where(eq(schema.runs.id, id)).get())!.pausedMs;

  it("refuses a pause without the session's CSRF token, or from another origin, and changes nothing", async () => {
    const run = await liveRun();
    const b = await signedIn();
    const csrf = await csrfOf(b, `/console/runs/${run.chain}`);
    expect((await b.fetch(`/console/runs/${run.chain}/pause`, { form: {} })).status).toBe(403);
    expect((await b.fetch(`/console/runs/${run.chain}/pause`, { form: { csrf: "f".repeat(48) } })).status).toBe(403);
    const other = await signedIn();
    expect((await b.fetch(`/console/runs/${run.chain}/pause`, { form: { csrf: await csrfOf(other) } })).status).toBe(403);
    const cross = await b.fetch(`/console/runs/${run.chain}/pause`, { form: { csrf }, headers: { origin: "https://evil.example" } });
    expect(cross.status).toBe(403);
    const site = await b.fetch(`/console/runs/${run.chain}/pause`, { form: { csrf }, headers: { "sec-fetch-site": "cross-site" } });
    expect(site.status).toBe(403);
    expect(await pausedRow(run.chain)).toBeNull();

    const ok = await b.fetch(`/console/runs/${run.chain}/pause`, { form: { csrf }, headers: { origin: BASE } });
    expect(ok.status).toBe(303);
    // The computer holds no push connection here: the redirect says it has not applied the pause yet, and the page names it.
    const to = `/console/runs/${run.chain}?done=paused&late=${host.id}.offline`;
    expect(ok.headers.get("location")).toBe(to);
    expect(await pausedRow(run.chain)).not.toBeNull();
    const after = (await b.page(to)).html;
    expect(after).toContain("Resume run");
    expect(after).toContain(`Not applied everywhere yet: box (${host.id}) is offline: it applies the change when it connects again.`);
    expect((await b.fetch(`/console/runs/${run.chain}/resume`, { form: { csrf } })).status).toBe(303);
    expect(await pausedRow(run.chain)).toBeNull();
  });

  it("a read-only operator may look and sign out, not change anything", async () => {
    const minted = (await (await op(token, "/v1/tokens", { json: { name: "reader", scope: "read" } })).json()) as { token: string };
    const run = await liveRun();
    const b = await signedIn(minted.token);
    const csrf = await csrfOf(b, `/console/runs/${run.chain}`);
    expect((await b.fetch(`/console/runs/${run.chain}`)).status).toBe(200);
    expect((await b.fetch(`/console/runs/${run.chain}/pause`, { form: { csrf } })).status).toBe(403);
    expect(await pausedRow(run.chain)).toBeNull();
    expect((await b.fetch("/console/sign-out", { form: { csrf } })).status).toBe(303);
  });

  it("suspends and resumes a computer", async () => {
    const b = await signedIn();
    const csrf = await csrfOf(b);
    expect((await b.fetch(`/console/computers/${host.id}/suspend`, { form: { csrf } })).status).toBe(303);
    expect((await (await op(token, `/v1/hosts/${host.id}`)).json()) as object).toMatchObject({ status: "suspended" });
    expect((await b.fetch(`/console/computers/${host.id}/resume`, { form: { csrf, back: "agents" } })).headers.get("location")).toBe(
      `/console?done=resumed&late=${host.id}.offline`,
    );
    expect((await (await op(token, `/v1/hosts/${host.id}`)).json()) as object).toMatchObject({ status: "active" });
  });

  it("pauses and resumes an agent on one computer and across the workspace, pushing each change to the host's policy", async () => {
    const agentOf = async () => {
      const list = (await (await op(token, "/v1/agents")).json()) as {
        agents: { host_id: string; name: string; paused_where: string | null }[];
      };
      return list.agents.find((a) => a.host_id === host.id && a.name === "claude-code")?.paused_where;
    };
    const pausedAgents = async () => (await hostPolicyOf(host)).paused_agents ?? [];
    const b = await signedIn();
    const csrf = await csrfOf(b);
    const here = { name: "claude-code", host: host.id };
    expect(await agentOf()).toBeNull();
    expect((await b.page("/console")).html).toMatch(new RegExp(`aria-label="Pause claude-code on [^"]* \\(${host.id}\\)"`));

    expect((await b.fetch("/console/agents/pause", { form: here })).status).toBe(403);
    expect((await b.fetch("/console/agents/pause", { form: { ...here, csrf: "f".repeat(48) } })).status).toBe(403);
    expect((await b.fetch("/console/agents/pause", { form: { ...here, csrf }, headers: { origin: "https://evil.example" } })).status).toBe(
      403,
    );
    expect(await agentOf()).toBeNull();

    const paused = await b.fetch("/console/agents/pause", { form: { ...here, csrf } });
    expect(paused.status).toBe(303);
    expect(paused.headers.get("location")).toBe(`/console?done=agent_paused&late=${host.id}.offline`);
    expect(await agentOf()).toBe("host");
    expect(await pausedAgents()).toEqual(["claude-code"]);
    let html = (await b.page("/console")).html;
    expect(html).toContain("on this computer");
    expect(html).toMatch(new RegExp(`aria-label="Resume claude-code on [^"]* \\(${host.id}\\)"`));
    expect((await b.fetch("/console/agents/resume", { form: { ...here, csrf } })).status).toBe(303);
    expect(await agentOf()).toBeNull();
    expect(await pausedAgents()).toEqual([]);

    expect((await b.fetch("/console/agents/pause", { form: { name: "claude-code", host: "", csrf } })).status).toBe(303);
    expect(await agentOf()).toBe("workspace");
    expect(await pausedAgents()).toEqual(["claude-code"]);
    html = (await b.page("/console")).html;
    expect(html).toContain("Paused across the workspace");
    expect(html).toContain('aria-label="Resume claude-code across the workspace"');
    expect((await b.fetch("/console/agents/resume", { form: { name: "claude-code", host: "", csrf } })).status).toBe(303);
    expect(await agentOf()).toBeNull();
    expect(await pausedAgents()).toEqual([]);

    expect((await b.fetch("/console/agents/pause", { form: { name: "never-seen", host: "", csrf } })).status).toBe(404);
    expect((await b.fetch("/console/agents/pause", { form: { name: "", csrf } })).status).toBe(400);
  });

  it("refuses a read-only operator's agent pause with 403", async () => {
    const minted = (await (await op(token, "/v1/tokens", { json: { name: "reader2", scope: "read" } })).json()) as { token: string };
    const b = await signedIn(minted.token);
    const csrf = await csrfOf(b);
    expect((await b.fetch("/console/agents/pause", { form: { name: "claude-code", host: "", csrf } })).status).toBe(403);
    expect(await hostPolicyOf(host)).not.toHaveProperty("paused_agents");
  });

  it("shows a new enrollment token's tacho enroll line once", async () => {
    const b = await signedIn();
    const csrf = await csrfOf(b, "/console/computers");
    const res = await b.fetch("/console/computers/enrollment-tokens", {
      form: { csrf, ttl_minutes: "30", harness: ["codex", "claude-code"] },
    });
    expect(res.status).toBe(201);
    // The line wraps only the harnesses chosen.
    const line = /tacho enroll --server (\S+) --token (oxe_\S+) --workspace (\S+) --harness (\S+)<\/pre>/.exec(await res.text());
    expect(line?.[1]).toBe(BASE);
    expect(line?.[3]).toBe(workspaceId);
    expect(line?.[4]).toBe("claude-code,codex");
    const none = await (await b.fetch("/console/computers/enrollment-tokens", { form: { csrf, ttl_minutes: "30" } })).text();
    expect(none).toMatch(/--workspace \S+<\/pre>/);
    expect(none).toContain("It wraps no harness");
    expect((await b.page("/console/computers")).html).not.toContain(line![2]!);
    const bad = await b.fetch("/console/computers/enrollment-tokens", { form: { csrf, ttl_minutes: "0" } });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain("1 to 10,080 minutes");
    // Reached at another address, the line still names the origin hosts sign for (OXAGEN_ORIGIN), not the one in the address bar.
    const elsewhere = await signedIn(token, LOCAL);
    const other = await elsewhere.fetch("/console/computers/enrollment-tokens", {
      form: { csrf: await csrfOf(elsewhere, "/console/computers"), ttl_minutes: "30" },
    });
    expect(/tacho enroll --server (\S+) /.exec(await other.text())?.[1]).toBe(BASE);
  });
});

describe("a run's pages", () => {
  it("lists runs with filters and refuses a filter that is not valid", async () => {
    const run = new TestRun(host);
    run.start();
    await ingest(host, [run.part()]);
    const b = await signedIn();
    expect((await b.page("/console/runs?status=live")).html).toContain(run.chain);
    expect((await b.page("/console/runs?status=ended")).html).not.toContain(run.chain);
    const bad = await b.fetch("/console/runs?status=bogus");
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain("These filters are not valid: status");
  });

  it("gives one coverage statement on the API and the page; exports only a run that ended", async () => {
    const run = new TestRun(host, crypto.randomUUID(), "cursor");
    run.start();
    run.tool();
    await ingest(host, [run.part()]);
    const api = (await (await op(token, `/v1/runs/${run.chain}/coverage`)).json()) as {
      statement: { harness_kind: string; model_calls: string };
      text: string;
    };
    expect(api.statement.harness_kind).toBe("cursor");
    expect(api.statement.model_calls).toContain("Spend is not metered");
    expect(api.text).toContain("Cursor's model calls");
    const b = await signedIn();
    const page = (await b.page(`/console/runs/${run.chain}/coverage`)).html;
    expect(page).toContain("Spend is not metered for this run.");
    expect(page).toContain("unobserved_tail");

    const live = await b.fetch(`/console/runs/${run.chain}/export`);
    expect(live.status).toBe(409);
    expect(await live.text()).toContain("The run is live: it can be exported once it ends or is sealed.");
    run.stop();
    run.lock(true);
    await ingest(host, [run.part(run.frames.slice(2), run.locks)]);
    const done = await b.fetch(`/console/runs/${run.chain}/export`);
    expect(done.status).toBe(200);
    expect(done.headers.get("content-disposition")).toBe(`attachment; filename="${run.chain}.oxagen.jsonl"`);
    expect((await done.text()).length).toBeGreaterThan(100);
    const runPage = (await b.page(`/console/runs/${run.chain}`)).html;
    expect(runPage).toMatch(/oxagen verify run_[0-9a-f]{32}\.oxagen\.jsonl --server-key [0-9a-f]{64}/);
  });

  it("shows the run's spend by model, an unpriced call counted and not shown as $0", async () => {
    const run = new TestRun(host);
    run.start();
    run.llm();
    run.llm({ model: "claude-imaginary-9", path: "transcript" });
    await ingest(host, [run.part()]);
    const b = await signedIn();
    const { res, html } = await b.page(`/console/runs/${run.chain}`);
    expect(res.status).toBe(200);
    expect(html).toContain("plus 1 unpriced call");
    const row = (model: string) => new RegExp(`<th scope="row" class="mono">${model}</th>((?:<td[^>]*>[^<]*</td>)+)`).exec(html)?.[1];
    expect(row("claude-sonnet-4-5")).toMatch(
      /^<td>anthropic<\/td><td>1<\/td><td>1<\/td><td>0<\/td><td>1000<\/td><td>100<\/td><td>\$0\.0045<\/td>/,
    );
    expect(row("claude-imaginary-9")).toMatch(
      /^<td>anthropic<\/td><td>1<\/td><td>0<\/td><td>1<\/td><td>1000<\/td><td>100<\/td><td>unpriced<\/td><td class="mono">—<\/td>$/,
    );
  });

  it("answers 404 for another workspace's run and for a body no frame names", async () => {
    const { token: theirs } = await seedWorkspace();
    const run = new TestRun(host);
    run.start();
    await ingest(host, [run.part()]);
    const b = await signedIn(theirs);
    expect((await b.fetch(`/console/runs/${run.chain}`)).status).toBe(404);
    const mine = await signedIn();
    expect((await mine.fetch(`/console/runs/${run.chain}/frames/0/bodies/0`)).status).toBe(404);
    expect((await mine.fetch("/console/nowhere")).status).toBe(404);
  });
});

describe("the spend page", () => {
  it("sums the priced calls of the last 30 days by agent and by computer, by the day the server received each", async () => {
    const day = 24 * 60 * 60_000;
    const now = Date.now();
    const spends = [1_500_000, 250_000, 0, 9_000_000];
    const at = [now - day, now - day, now - 2 * day, now - 40 * day];
    // A computer of its own: the other tests' runs on the shared one have calls too.
    const spender = await enrollHost(token);
    await projectSpend(
      spends.map((microusd, i) => ({
        runId: `run_${(0x5e0 + i).toString(16).padStart(32, "0")}`,
        day: new Date(at[i]!).toISOString().slice(0, 10),
        vendor: "anthropic",
        model: "claude-sonnet-4-5",
        priceVersion: "genai-prices@0.1.8",
        workspaceId: spender.workspaceId,
        hostId: spender.id,
        agent: "spend-bot",
        calls: 1,
        unpricedCalls: 0,
        microusd,
        inputTokens: 1,
        outputTokens: 1,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        version: 1,
      })),
    );
    const b = await signedIn();
    const { res, html } = await b.page("/console/spend");
    expect(res.status).toBe(200);
    const row = (key: string) => new RegExp(`<th scope="row" class="mono">${key}</th><td>(\\d+)</td><td>([^<]+)</td>`).exec(html)?.slice(1);
    expect(row("spend-bot")).toEqual(["3", "$1.75"]);
    expect(row(spender.id)).toEqual(["3", "$1.75"]);
    expect(html).not.toContain("$10.75");
  });

  it("dates a run's spend by each call's receipt, as GET /v1/spend does, for a run that crosses UTC midnight", async () => {
    const ws = await seedWorkspace();
    const h = await enrollHost(ws.token);
    const midnight = new Date().setUTCHours(0, 0, 0, 0);
    const [before, after] = [new Date(midnight - 1).toISOString().slice(0, 10), new Date(midnight).toISOString().slice(0, 10)];
    const run = new TestRun(h);
    // One call received a minute before midnight (UTC), the next a minute after: the server's clock says which day.
    run.t = midnight - 120_000;
    run.start();
    run.llm();
    vi.useFakeTimers({ toFake: ["Date"], now: midnight - 60_000 });
    try {
      expect((await ingest(h, [run.part()])).status).toBe(200);
      run.t = midnight + 30_000;
      const second = run.llm({ usage: { input_tokens: 2000, output_tokens: 200 } });
      vi.setSystemTime(midnight + 60_000);
      expect((await ingest(h, [run.part([second])])).status).toBe(200);
    } finally {
      vi.useRealTimers();
    }
    const api = (await (await op(ws.token, `/v1/spend?group_by=day&run=${run.chain}`)).json()) as {
      rows: { day: string; microusd: number }[];
    };
    const byDay = Object.fromEntries(api.rows.map((r) => [r.day, r.microusd]));
    expect(byDay).toEqual({ [before]: 4500, [after]: 9000 });
    const { html } = await (await signedIn(ws.token)).page("/console/spend");
    const row = (key: string) => new RegExp(`<th scope="row" class="mono">${key}</th><td>(\\d+)</td><td>([^<]+)</td>`).exec(html)?.slice(1);
    expect(row(before)).toEqual(["1", "$0.0045"]);
    expect(row(after)).toEqual(["1", "$0.0090"]);
    expect(html).toContain(`<title>${before}: $0.0045</title>`);
    expect(html).toContain(`<title>${after}: $0.0090</title>`);
  });

  it("breaks the period's model calls down by model from the priced calls", async () => {
    const run = new TestRun(host);
    run.start();
    // $1.25/M input and $10/M output: 2,250 millionths each.
    run.llm({ vendor: "openai", model: "gpt-5-codex" });
    run.llm({ vendor: "openai", model: "gpt-5-codex" });
    run.llm({ model: "model-nobody-prices" });
    await ingest(host, [run.part()]);
    const b = await signedIn();
    const { html } = await b.page("/console/spend");
    expect(html).toContain("By model");
    const row = (model: string) => new RegExp(`<th scope="row" class="mono">${model}</th>((?:<td[^>]*>[^<]*</td>)+)`).exec(html)?.[1];
    expect(row("gpt-5-codex")).toMatch(/^<td>openai<\/td><td>2<\/td><td>2<\/td><td>0<\/td><td>2000<\/td><td>200<\/td><td>\$0\.0045<\/td>/);
    expect(row("model-nobody-prices")).toContain("<td>unpriced</td>");
  });
});

describe("budgets on the spend and run pages", () => {
  it("shows each clause's use against its limit, an exhausted run, escaped clause ids, and spend by day as an SVG chart", async () => {
    const ws = await seedWorkspace();
    const h = await enrollHost(ws.token);
    const put = await op(ws.token, `/v1/workspaces/${ws.workspaceId}/policy`, {
      method: "PUT",
      json: {
        mode: "enforce",
        tools: [],
        default_tool_decision: "none",
        models: null,
        budgets: [
          { id: HOSTILE, scope: "workspace", window: "day", limit_microusd: 9000 },
          { id: "per-run", scope: "run", window: "run", limit_microusd: 4500 },
          { id: "box", scope: "host", window: "month", limit_microusd: 1_000_000 },
        ],
        retention: { mode: "keep", keep: ["prompt"] },
      },
    });
    expect(put.status).toBe(200);
    const run = new TestRun(h);
    // Frames from a minute ago: the runs-based breakdowns count a run by its last frame's day.
    run.t = Date.now() - 60_000;
    run.start();
    run.llm();
    await ingest(h, [run.part()]);
    const b = await signedIn(ws.token);
    const { res, html } = await b.page("/console/spend");
    expect(res.status).toBe(200);
    expect(html).not.toContain("<script>");
    expect(html).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;");
    const cells = (clause: string) =>
      [...html.matchAll(new RegExp(`<tr><th scope="row">${clause}: [^<]*</th>(.*?)</tr>`, "g"))].map((m) =>
        [...m[1]!.matchAll(/<td[^>]*>(.*?)<\/td>/g)].map((c) => c[1]!.replace(/<meter[^>]*>.*?<\/meter>\s*/, "").replace(/<[^>]+>/g, "")),
      );
    const until = new Date();
    until.setUTCHours(24, 0, 0, 0);
    const day = until
      .toISOString()
      .replace("T", " ")
      .replace(/\.\d+Z$/, "Z");
    expect(cells("per-run")).toEqual([[run.chain, "$0.0045", "$0.0045", "100%", "exhausted", "when the run ends"]]);
    expect(cells("&lt;script&gt;.*?")).toEqual([["the workspace", "$0.0045", "$0.0090", "50%", "within", day]]);
    expect(cells("box")[0]!.slice(0, 5)).toEqual([h.id, "$0.0045", "$1.00", "0%", "within"]);
    expect(html).toMatch(
      /<meter min="0" max="4500" low="2250" high="3600" optimum="0" value="4500" aria-label="per-run: run budget for the run&#39;s lifetime, run_[0-9a-f]{32}: 100% of the limit">/,
    );
    // The chart: an image with a title, the day's figure on its bar, and the same figure in the table.
    const today = new Date().toISOString().slice(0, 10);
    expect(html).toMatch(/<svg class="chart" viewBox="0 0 720 180" role="img" aria-labelledby="spend-chart-title"/);
    expect(html).toMatch(
      /<title id="spend-chart-title">Spend by day, \d{4}-\d\d-\d\d to \d{4}-\d\d-\d\d \(UTC\): \$0\.0045 in all<\/title>/,
    );
    expect(html).toContain(`<title>${today}: $0.0045</title>`);
    expect(html).toContain(`<th scope="row" class="mono">${today}</th><td>1</td><td>$0.0045</td>`);
    expect(html.match(/<rect class="bar"/g)).toHaveLength(31);
    // The run's page shows the clauses that apply to it.
    const page = (await b.page(`/console/runs/${run.chain}`)).html;
    expect(page).toContain('<h2 id="run-budgets">Budgets</h2>');
    expect(page).toMatch(/<th scope="row">per-run: [^<]*<\/th><td><a href="\/console\/runs\/run_[0-9a-f]{32}">/);
    expect(page).toContain('<span class="state state-exhausted">exhausted</span>');
  });

  it("says so when the workspace has no budget clause", async () => {
    const ws = await seedWorkspace();
    const b = await signedIn(ws.token);
    const { html } = await b.page("/console/spend");
    expect(html).toContain("No budget clause.");
    expect(html).toMatch(/<title id="spend-chart-title">Spend by day, [^<]*: \$0\.00 in all<\/title>/);
  });
});

describe("a computer's own chain in the console", () => {
  it("shows the frames of host_<id> to the workspace's operators, linked from the computers page; another workspace's is 404", async () => {
    const chain = `host_${host.id}`;
    const writer = new ChainWriter(chain);
    const { frame } = writer.append(
      "error",
      { path: "gateway", code: "upstream_timeout", forwarded: false, status: 504, vendor: "anthropic" },
      1_767_225_600_000,
    );
    expect((await ingest(host, [{ chain, frames: [frame], locks: [] }])).status).toBe(200);
    const b = await signedIn();
    expect((await b.page("/console/computers")).html).toContain(`href="/console/runs/${chain}"`);
    const { res, html } = await b.page(`/console/runs/${chain}`);
    expect(res.status).toBe(200);
    expect(html).toContain("its own chain");
    expect(html).toContain("the vendor did not answer in time");
    expect(html).toContain("answering 504");
    const other = await seedWorkspace();
    const stranger = await signedIn(other.token);
    expect((await stranger.page(`/console/runs/${chain}`)).res.status).toBe(404);
  });
});
