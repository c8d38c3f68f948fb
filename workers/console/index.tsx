/** @jsxImportSource hono/jsx */
import { eq } from "drizzle-orm";
import { type Context, Hono } from "hono";
import { getCookie } from "hono/cookie";
import { HTTPException } from "hono/http-exception";
import { AgentName, bytesToHex, HARNESSES } from "../../protocol/index.ts";
import { db, schema } from "../db/client.ts";
import { AppError } from "../errors.ts";
import { budgetUseOf } from "../lib/budget-use.ts";
import { agentPauses, markPaused, setAgentPaused } from "../lib/agent-pauses.ts";
import { runCoverage } from "../lib/coverage.ts";
import { bodyKey } from "../lib/body-store.ts";
import { spendSince } from "../lib/spend.ts";
import { exportAnswer, ownRun, pauseRun, resumeRun, runDetail, sealRun } from "../lib/runs.ts";
import { unenrollHost } from "../lib/host-keys.ts";
import { EnrollmentTtlMinutes, mintEnrollmentToken } from "../lib/tokens.ts";
import { DEVICE_PAGE } from "../lib/device.ts";
import { serverOrigin } from "../auth/host.ts";
import { agentsOf, hostView, ownHost, setSuspended } from "../routes/hosts.ts";
import { policyEdit, policyPage } from "./policy.tsx";
import { checkedForm, pageCtx } from "./context.ts";
import { deviceConsole } from "./device.tsx";
import { registerAgentConsole } from "./register-agent.tsx";
import { registeredAgents } from "../lib/registered-agents.ts";
import { AgentsPage } from "./pages/agents.tsx";
import { ComputersPage, type Minted, RemoveComputerPage } from "./pages/computers.tsx";
import { CoveragePage } from "./pages/coverage.tsx";
import { HostChainPage } from "./pages/host-chain.tsx";
import { ErrorPage, SignInPage } from "./pages/signin.tsx";
import { SpendPage } from "./pages/spend.tsx";
import { actionNotice, AGENT_DONE, lateQuery } from "./propagation.ts";
import { bodyPage, runPage, TIMELINE_PAGE } from "./run-page.tsx";
import { runsPage } from "./runs-page.tsx";
import { toolsPages } from "./tools.tsx";
import {
  type ConsoleEnv,
  consoleSession,
  dropCookie,
  formOf,
  preCookie,
  requireCsrf,
  SIGN_IN,
  SIGN_OUT,
  SIGNED_OUT,
  SignedOut,
  safeNext,
  sessionCookie,
  signIn,
  signInCsrf,
  signInUrl,
  signOut,
} from "./session.ts";
import { STYLE } from "./style.ts";

/** No script, no inline style, no frames, forms only to this origin. */
export const CSP = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
const RUN_ID = "run_[0-9a-f]{32}";
/** Per-run and per-host budget scopes the Spend page lists per clause, the largest spend first. */
const BUDGET_TOP = 10;

/**
 * The operator console: server-rendered pages under /console, signed in with a session cookie.
 * Every page reads the same shared functions the API routes do (workers/lib, routes/hosts.ts).
 */
export const consoleApp = new Hono<ConsoleEnv>()
  .use("/console", headers)
  .use("/console/*", headers)
  .get("/", (c) => c.redirect("/console", 302))
  .get("/console/style.css", (c) => {
    c.header("Cache-Control", "public, max-age=300");
    return c.body(STYLE, 200, { "Content-Type": "text/css; charset=utf-8" });
  })
  .get(SIGN_IN, (c) => {
    const why = c.req.query("why") ?? "none";
    const notice = Object.hasOwn(SIGNED_OUT, why) ? SIGNED_OUT[why as keyof typeof SIGNED_OUT] : "";
    return c.html(<SignInPage csrf={signInCsrf(c)} notice={notice} error={null} next={safeNext(c.req.query("next"))} />);
  })
  .post(SIGN_IN, async (c) => {
    const form = formOf(c);
    requireCsrf(c, form, getCookie(c, preCookie(c)) ?? "");
    try {
      await signIn(c, (form.get("token") ?? "").trim());
    } catch (err) {
      if (!(err instanceof AppError) || err.status !== 401) throw err;
      return c.html(<SignInPage csrf={signInCsrf(c)} notice="" error={err.message} next={safeNext(form.get("next"))} />, 401);
    }
    return c.redirect(safeNext(form.get("next")) ?? "/console", 303);
  })
  .use("/console", consoleSession)
  .use("/console/*", consoleSession)
  .post(SIGN_OUT, async (c) => {
    const form = checkedForm(c);
    await signOut(c);
    return c.redirect(signInUrl("signed_out", form.get("next")), 303);
  })
  .get("/console", async (c) => {
    // A removed (unenrolled) computer records nothing more: the Computers page still lists it.
    const rows = (await db(c.env).select().from(schema.hosts).where(eq(schema.hosts.workspaceId, c.var.workspaceId)).all()).filter(
      (h) => h.status !== "unenrolled",
    );
    const now = Date.now();
    const pauses = await agentPauses(c.env, c.var.workspaceId);
    const hosts = await Promise.all(
      rows.map(async (h) => ({ host: hostView(h), agents: markPaused(await agentsOf(c.env, h, now), pauses) })),
    );
    const everywhere = pauses.filter((p) => p.host === "*").map((p) => p.name);
    const notice = actionNotice(c.req.query(), AGENT_DONE, new Map(rows.map((h) => [h.id, h.hostname])));
    const registered = await registeredAgents(c.env, c.var.workspaceId);
    return c.html(<AgentsPage ctx={pageCtx(c)} hosts={hosts} pausedEverywhere={everywhere} notice={notice} registered={registered} />);
  })
  .post("/console/agents/:action{pause|resume}", async (c) => {
    const form = checkedForm(c);
    const name = AgentName.safeParse(form.get("name"));
    if (!name.success) throw new AppError(400, "invalid_request", "No such agent name.");
    const hostId = form.get("host") ?? "";
    const host = hostId === "" ? null : await ownHost(c.env, c.var.workspaceId, hostId);
    const pause = c.req.param("action") === "pause";
    const { propagation } = await setAgentPaused(c.env, c.var.workspaceId, name.data, host, pause);
    return c.redirect(`/console?done=${pause ? "agent_paused" : "agent_resumed"}${lateQuery(propagation)}`, 303);
  })
  .get("/console/runs", async (c) => {
    const { status, page } = await runsPage(c.env, c.var.workspaceId, pageCtx(c), c.req.query());
    return c.html(page, status);
  })
  .get(`/console/runs/:id{${RUN_ID}}`, async (c) => c.html(await runPage(c.env, pageCtx(c), c.req.param("id"), c.req.query())))
  .get("/console/runs/:id{host_[a-z0-9][a-z0-9_-]{0,63}}", async (c) => {
    // A computer's own chain: the workspace's computer, or no such page (as for a run of another workspace).
    const host = await ownHost(c.env, c.var.workspaceId, c.req.param("id").slice("host_".length));
    const from = Math.max(0, Number.parseInt(c.req.query("from") ?? "0", 10) || 0);
    const page = await c.env.CHAINS.get(c.env.CHAINS.idFromName(`host_${host.id}`)).frames(from, TIMELINE_PAGE);
    return c.html(<HostChainPage ctx={pageCtx(c)} hostId={host.id} frames={page.frames} from={from} next={page.next} />);
  })
  .get(`/console/runs/:id{${RUN_ID}}/coverage`, async (c) => {
    const row = await ownRun(c.env, c.var.workspaceId, c.req.param("id"));
    const { statement } = runCoverage(await runDetail(c.env, row));
    return c.html(<CoveragePage ctx={pageCtx(c)} run={row.id} statement={statement} />);
  })
  .get(`/console/runs/:id{${RUN_ID}}/frames/:seq{[0-9]{1,15}}/bodies/:i{[0-9]{1,2}}`, async (c) =>
    c.html(await bodyPage(c.env, pageCtx(c), c.req.param("id"), Number(c.req.param("seq")), Number(c.req.param("i")))),
  )
  .get(`/console/runs/:id{${RUN_ID}}/export`, async (c) => {
    return exportAnswer(c.env, await ownRun(c.env, c.var.workspaceId, c.req.param("id")));
  })
  .post(`/console/runs/:id{${RUN_ID}}/:action{pause|resume|seal}`, async (c) => {
    checkedForm(c);
    const row = await ownRun(c.env, c.var.workspaceId, c.req.param("id"));
    const action = c.req.param("action");
    const propagation =
      action === "pause"
        ? await pauseRun(c.env, row)
        : action === "resume"
          ? await resumeRun(c.env, row)
          : (await sealRun(c.env, row)).propagation;
    const done = action === "pause" ? "paused" : action === "resume" ? "resumed" : "sealed";
    return c.redirect(`/console/runs/${row.id}?done=${done}${lateQuery(propagation)}`, 303);
  })
  .get("/console/computers", async (c) => c.html(await computersPage(c, null, null)))
  .post("/console/computers/enrollment-tokens", async (c) => {
    const form = checkedForm(c);
    const ttl = EnrollmentTtlMinutes.safeParse(Number(form.get("ttl_minutes")));
    if (!ttl.success) return c.html(await computersPage(c, null, "Give the token a life of 1 to 10,080 minutes (a week)."), 400);
    const harnesses = HARNESSES.filter((h) => form.getAll("harness").includes(h));
    const minted = await mintEnrollmentToken(c.env, c.var.workspaceId, c.var.tokenId, ttl.data);
    return c.html(await computersPage(c, { ...minted, harnesses }, null), 201);
  })
  .get("/console/computers/:id/remove", async (c) => {
    const host = await ownHost(c.env, c.var.workspaceId, c.req.param("id"));
    if (host.status === "unenrolled") return c.redirect("/console/computers", 303);
    return c.html(<RemoveComputerPage ctx={pageCtx(c)} host={hostView(host)} />);
  })
  .post("/console/computers/:id/remove", async (c) => {
    checkedForm(c);
    const host = await ownHost(c.env, c.var.workspaceId, c.req.param("id"));
    await unenrollHost(c.env, host, Date.now());
    return c.redirect("/console/computers?done=removed", 303);
  })
  .post("/console/computers/:id/:action{suspend|resume}", async (c) => {
    const form = checkedForm(c);
    const host = await ownHost(c.env, c.var.workspaceId, c.req.param("id"));
    const suspend = c.req.param("action") === "suspend";
    const { propagation } = await setSuspended(c.env, host, suspend);
    const done = `?done=${suspend ? "suspended" : "resumed"}${lateQuery(propagation)}`;
    return c.redirect(`${form.get("back") === "agents" ? "/console" : "/console/computers"}${done}`, 303);
  })
  .get("/console/spend", async (c) => {
    const days = 30;
    const fromMs = Date.now() - days * 24 * 60 * 60_000;
    const [spend, budgets] = await Promise.all([
      spendSince(c.env, c.var.workspaceId, fromMs),
      budgetUseOf(c.env, c.var.workspaceId, { top: BUDGET_TOP }),
    ]);
    return c.html(
      <SpendPage ctx={pageCtx(c)} days={days} from={new Date(fromMs).toISOString().slice(0, 10)} spend={spend} budgets={budgets} />,
    );
  })
  .route("/", deviceConsole)
  .route("/", registerAgentConsole)
  .get("/console/policy", async (c) => c.html(await policyPage(c.env, pageCtx(c))))
  .post("/console/policy", async (c) => {
    const form = checkedForm(c);
    const { status, page } = await policyEdit(c.env, pageCtx(c), form);
    return c.html(page, status);
  })
  .route("/", toolsPages)
  .all("/console/*", () => {
    throw new AppError(404, "not_found", "No such page.");
  });

consoleApp.onError((err, c) => {
  if (err instanceof SignedOut) {
    dropCookie(c, sessionCookie(c));
    // The device page is where a command line sends its operator: signing in goes back to it.
    const url = new URL(c.req.url);
    const back = c.req.method === "GET" && url.pathname === DEVICE_PAGE ? `${url.pathname}${url.search}` : null;
    return c.redirect(signInUrl(err.why, back), 303);
  }
  const signedIn = c.get("tokenId") !== undefined;
  if (err instanceof AppError) {
    if (err.status >= 500) console.error("console error", err.code, err.cause ?? err);
    return c.html(<ErrorPage status={err.status} message={err.message} signedIn={signedIn} />, err.status);
  }
  if (err instanceof HTTPException)
    return c.html(<ErrorPage status={err.status} message={err.message || "Request refused."} signedIn={signedIn} />, err.status);
  console.error("console unhandled error", err);
  return c.html(<ErrorPage status={500} message="Something went wrong on the server." signedIn={signedIn} />, 500);
});

async function headers(c: Context, next: () => Promise<void>) {
  await next();
  c.header("Content-Security-Policy", CSP);
  c.header("X-Content-Type-Options", "nosniff");
  // same-origin, not no-referrer: under no-referrer a browser sends `Origin: null` with a form POST.
  c.header("Referrer-Policy", "same-origin");
  c.header("X-Frame-Options", "DENY");
  if (!c.res.headers.has("Cache-Control")) c.header("Cache-Control", "no-store");
}

async function computersPage(c: Context<ConsoleEnv>, minted: Minted | null, error: string | null) {
  const rows = await db(c.env).select().from(schema.hosts).where(eq(schema.hosts.workspaceId, c.var.workspaceId)).all();
  return (
    <ComputersPage
      ctx={pageCtx(c)}
      hosts={rows.map(hostView)}
      server={serverOrigin(c.env)}
      workspace={c.var.workspaceId}
      minted={minted}
      error={error}
      notice={actionNotice(c.req.query(), AGENT_DONE, new Map(rows.map((h) => [h.id, h.hostname])))}
    />
  );
}
