// Agent registration: an operator registers a custom agent name; its one-time token enrolls the
// computer that runs it, which wraps the agent (idle) until its first run (healthy).
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { bytesToHex, newSecretKey, publicKeyOf } from "../../protocol/index.ts";
import { Browser, signedIn } from "./console-browser.ts";
import { BASE, ingest, op, seedWorkspace, TestRun } from "./support.ts";

let token: string;
let readToken: string;

interface Registered {
  name: string;
  created: boolean;
  token: string;
  token_id: string;
  expires_ms: number;
  command: string;
}
type Listed = {
  agents: { host_id: string; name: string; kind: string; health: string; reason: string }[];
  registered: Record<string, unknown>[];
};

const register = (json: unknown, as = token) => op(as, "/v1/agents", { json });
const listed = async () => (await (await op(token, "/v1/agents")).json()) as Listed;

beforeAll(async () => {
  ({ token } = await seedWorkspace());
  readToken = ((await (await op(token, "/v1/tokens", { json: { name: "viewer", scope: "read" } })).json()) as { token: string }).token;
});

describe("registering a custom agent", () => {
  it("issues a one-time token and the exact command; the agent is idle until its computer's first run", async () => {
    const res = await register({ name: "refunds" });
    expect(res.status).toBe(201);
    const r = (await res.json()) as Registered;
    expect(r).toMatchObject({ name: "refunds", created: true });
    expect(r.command).toBe(`oxagen agent enroll --server http://oxagen.test --token ${r.token}`);
    expect((await listed()).registered).toEqual([
      expect.objectContaining({ name: "refunds", hosts: [], health: "idle", reason: "registered; no computer has enrolled for it yet" }),
    ]);

    // Its computer enrolls with the token (wrapping no harness): the host wraps the agent.
    const secret = newSecretKey();
    const enrolled = await exports.default.fetch(`${BASE}/v1/enroll`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token: r.token, public_key: bytesToHex(publicKeyOf(secret)), hostname: "refund-box", harnesses: [] }),
    });
    expect(enrolled.status).toBe(201);
    const { host_id, workspace } = (await enrolled.json()) as { host_id: string; workspace: string };
    const host = { id: host_id, secret, workspaceId: workspace };
    const mine = async () => (await listed()).agents.find((a) => a.host_id === host_id && a.name === "refunds");
    expect(await mine()).toMatchObject({ kind: "custom", health: "idle", reason: "wrapped, no runs yet" });
    expect((await listed()).registered).toEqual([expect.objectContaining({ name: "refunds", hosts: [host_id], health: null })]);

    const run = new TestRun(host, "refund-1", "refunds");
    run.add("agent_start", { path: "hook", harness: "refunds", session_id: "refund-1" });
    expect((await ingest(host, [run.part()])).status).toBe(200);
    expect(await mine()).toMatchObject({ health: "healthy" });
  });

  it("registering a name again gives a token for one more computer", async () => {
    await register({ name: "nightly" });
    const again = await register({ name: "nightly", ttl_minutes: 5 });
    expect(again.status).toBe(200);
    const r = (await again.json()) as Registered;
    expect(r.created).toBe(false);
    expect(r.expires_ms - Date.now()).toBeLessThanOrEqual(5 * 60_000);
    expect((await listed()).registered.filter((a) => a.name === "nightly")).toHaveLength(1);
  });

  it("refuses a built-in name, a name off the rules, and a read-only token", async () => {
    for (const name of ["claude-code", "codex", "custom", "proxy"]) {
      const res = await register({ name });
      expect(res.status, name).toBe(400);
    }
    for (const name of ["Refunds", "-x", "a b", "x".repeat(65), ""]) expect((await register({ name })).status, name).toBe(400);
    expect((await register({ name: "ok-agent" }, readToken)).status).toBe(403);
    expect((await listed()).registered.map((a) => a.name)).not.toContain("ok-agent");
  });
});

describe("registering a custom agent in the console", () => {
  it("shows the command once, lists the agent idle on the Wrapped agents panel, and explains a refused name", async () => {
    const b = await signedIn(token);
    const form = await b.page("/console/agents/register");
    const csrf = Browser.csrf(form.html);
    const bad = await b.fetch("/console/agents/register", { form: { csrf, name: "cursor", ttl_minutes: "60" } });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain("is a built-in harness or runtime name");
    const ok = await b.fetch("/console/agents/register", { form: { csrf, name: "ledger-bot", ttl_minutes: "60" } });
    expect(ok.status).toBe(201);
    const html = await ok.text();
    expect(html).toMatch(/oxagen agent enroll --server http:\/\/oxagen\.test --token oxe_[0-9a-f]{16}_[0-9a-f]{48}/);
    const panel = (await b.page("/console")).html;
    expect(panel).toContain("Registered custom agents");
    expect(panel).toMatch(/ledger-bot<\/th>.*?idle.*?registered; no computer has enrolled for it yet/s);
    // Reading the panel again never shows the token.
    expect(panel).not.toMatch(/oxe_[0-9a-f]{16}_/);
    const viewer = await signedIn(readToken);
    expect(
      (await viewer.fetch("/console/agents/register", { form: { csrf: Browser.csrf((await viewer.page("/console")).html), name: "x1" } }))
        .status,
    ).toBe(403);
  });
});
