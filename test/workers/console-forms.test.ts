// The console's forms for people: the policy as fields (rows added and removed, every error at
// once next to its field, in sentences), upstreams, removing a computer after a confirmation,
// duplicate computer names called out, and Pause only where there is something to pause.
import { describe, expect, it } from "vitest";
import { Browser, csrfOf, signedIn } from "./console-browser.ts";
import { enrollHost, op, seedWorkspace } from "./support.ts";

async function workspace() {
  const ws = await seedWorkspace();
  return { ...ws, b: await signedIn(ws.token) };
}

/** The policy form as a browser posts it, rows as repeated fields in document order. */
function policyPost(csrf: string, over: Record<string, string | string[]> = {}) {
  return {
    csrf,
    intent: "save",
    mode: "enforce",
    default_tool_decision: "none",
    retention_mode: "keep",
    retention_keep: ["prompt"],
    all_models: "1",
    "upstream.anthropic": "",
    "upstream.openai": "",
    ...over,
  };
}

const policyOf = async (token: string, id: string) =>
  ((await (await op(token, `/v1/workspaces/${id}/policy`)).json()) as { etag: string; policy: Record<string, unknown> }).policy;

async function post(b: Browser, form: Record<string, string | string[]>) {
  const res = await b.fetch("/console/policy", { form });
  return { status: res.status, html: await res.text() };
}

describe("the Policy page's form", () => {
  it("edits tool, model and budget clauses as fields and saves them signed", async () => {
    const { token, workspaceId, b } = await workspace();
    const csrf = await csrfOf(b, "/console/policy");
    const saved = await post(
      b,
      policyPost(csrf, {
        all_models: "",
        model: ["claude-*", ""],
        "tool.id": ["no-force-push"],
        "tool.tool": ["Bash"],
        "tool.command": ["git push --force*"],
        "tool.decision": ["deny"],
        "tool.reason": ["no force pushes"],
        "budget.id": ["team-daily", "per-run"],
        "budget.scope": ["workspace", "run"],
        "budget.window": ["day", "run"],
        "budget.limit": ["$1,250.50", "0.0045"],
        "upstream.anthropic": "https://llm-proxy.example.com/anthropic",
      }),
    );
    expect(saved.status).toBe(200);
    expect(saved.html).toContain("Saved: the policy is signed and served with a new ETag.");
    const p = await policyOf(token, workspaceId);
    expect(p.tools).toEqual([
      { id: "no-force-push", tool: "Bash", command: "git push --force*", decision: "deny", reason: "no force pushes" },
    ]);
    expect(p.models).toEqual(["claude-*"]);
    expect(p.budgets).toEqual([
      { id: "team-daily", scope: "workspace", window: "day", limit_microusd: 1_250_500_000 },
      { id: "per-run", scope: "run", window: "run", limit_microusd: 4500 },
    ]);
    expect(p.upstreams).toEqual({ anthropic: "https://llm-proxy.example.com/anthropic" });
    // The page shows the saved clauses back in their fields, the limit in dollars.
    const again = (await b.page("/console/policy")).html;
    expect(again).toContain('name="budget.limit" value="0.0045"');
    expect(again).toContain('name="budget.limit" value="1250.5"');
    expect(again).toContain('name="upstream.anthropic" value="https://llm-proxy.example.com/anthropic"');
    expect(again).not.toContain("issue 12");
    // Clearing an upstream removes it: a save replaces the policy.
    expect((await post(b, policyPost(csrf))).status).toBe(200);
    expect(await policyOf(token, workspaceId)).not.toHaveProperty("upstreams");
  });

  it("refuses a form with several mistakes: every one in a sentence under its field, nothing saved", async () => {
    const { token, workspaceId, b } = await workspace();
    const before = await policyOf(token, workspaceId);
    const csrf = await csrfOf(b, "/console/policy");
    const bad = await post(
      b,
      policyPost(csrf, {
        "tool.id": ["", "ok"],
        "tool.tool": ["Bash", ""],
        "tool.command": ["", ""],
        "tool.decision": ["maybe", "deny"],
        "tool.reason": ["x", ""],
        "budget.id": ["daily", "daily"],
        "budget.scope": ["workspace", "workspace"],
        "budget.window": ["day", "day"],
        "budget.limit": ["lots", "5"],
        "upstream.openai": "ftp://user:pw@proxy.example.com",
      }),
    );
    expect(bad.status).toBe(400);
    const errorOf = (key: string) => new RegExp(`id="err-${key}">([^<]+)<`).exec(bad.html)?.[1];
    expect(errorOf("tools-0-id")).toBe("Give the clause an id, such as no-force-push.");
    expect(errorOf("tools-0-decision")).toBe("Choose allow, ask or deny.");
    expect(errorOf("tools-1-tool")).toBe("Name the tool, or a pattern such as Bash or mcp__github__*.");
    expect(errorOf("budgets-0-limit")).toBe("Write the limit in dollars, such as 25 or 0.50.");
    expect(errorOf("budgets-1-id")).toBe("Another budget above has this id: each budget needs its own.");
    expect(errorOf("upstreams-openai")).toMatch(/^Write an http or https address with no user name, password, query or fragment/);
    expect(bad.html).toContain("The policy was not changed: 6 fields need a change, each marked below.");
    // Each control is tied to its error, and what was typed is kept.
    expect(bad.html).toMatch(/name="budget.limit" value="lots"[^>]*aria-describedby="err-budgets-0-limit" aria-invalid="true"/);
    expect(bad.html).not.toMatch(/invalid_type|invalid_value|Expected|received/);
    expect(await policyOf(token, workspaceId)).toEqual(before);
  });

  it("adds and removes rows without saving, keeping what was typed", async () => {
    const { token, workspaceId, b } = await workspace();
    const before = await policyOf(token, workspaceId);
    const csrf = await csrfOf(b, "/console/policy");
    const typed = {
      "budget.id": ["a", "b"],
      "budget.scope": ["run", "host"],
      "budget.window": ["run", "month"],
      "budget.limit": ["1", "2"],
    };
    const added = await post(b, policyPost(csrf, { ...typed, intent: "add_budget" }));
    expect(added.status).toBe(200);
    expect(added.html.match(/name="budget.id"/g)).toHaveLength(3);
    expect(added.html).toContain('name="budget.id" value="b"');
    const removed = await post(b, policyPost(csrf, { ...typed, intent: "remove_budget.0" }));
    expect(removed.html.match(/name="budget.id"/g)).toHaveLength(1);
    expect(removed.html).toContain('name="budget.id" value="b"');
    expect(removed.html).not.toContain('name="budget.id" value="a"');
    const tool = await post(b, policyPost(csrf, { intent: "add_tool" }));
    expect(tool.html.match(/name="tool.id"/g)).toHaveLength(1);
    expect(await policyOf(token, workspaceId)).toEqual(before);
    // Blank rows are left out of a save.
    expect(
      (
        await post(
          b,
          policyPost(csrf, { "tool.id": [""], "tool.tool": [""], "tool.command": [""], "tool.decision": ["deny"], "tool.reason": [""] }),
        )
      ).status,
    ).toBe(200);
    expect((await policyOf(token, workspaceId)).tools).toEqual([]);
  });
});

describe("the Computers page", () => {
  it("calls out computers with the same name, and removes one after a confirmation; its runs stay", async () => {
    const { token, b } = await workspace();
    const old = await enrollHost(token);
    const current = await enrollHost(token);
    const list = (await b.page("/console/computers")).html;
    expect(list).toContain("Computers with the same name.");
    expect(list).toContain("2 computers named <strong>box</strong>");
    expect(list.match(/same name as 1 other computer/g)).toHaveLength(2);
    const confirm = await b.page(`/console/computers/${old.id}/remove`);
    expect(confirm.res.status).toBe(200);
    expect(confirm.html).toContain(`Remove box <code class="muted">${old.id}</code>?`);
    const csrf = Browser.csrf(confirm.html);
    expect((await b.fetch(`/console/computers/${old.id}/remove`, { form: {} })).status).toBe(403);
    expect(((await (await op(token, `/v1/hosts/${old.id}`)).json()) as { status: string }).status).toBe("active");
    const removed = await b.fetch(`/console/computers/${old.id}/remove`, { form: { csrf } });
    expect(removed.status).toBe(303);
    expect(removed.headers.get("location")).toBe("/console/computers?done=removed");
    expect(((await (await op(token, `/v1/hosts/${old.id}`)).json()) as { status: string }).status).toBe("unenrolled");
    const after = (await b.page("/console/computers?done=removed")).html;
    expect(after).toContain("Removed: the computer is unenrolled");
    expect(after).not.toContain("Computers with the same name.");
    expect(after).toContain("Removed computers (1)");
    // The Wrapped agents panel lists only computers still enrolled.
    const panel = (await b.page("/console")).html;
    expect(panel).toContain(current.id);
    expect(panel).not.toContain(old.id);
  });
});

describe("the Wrapped agents panel", () => {
  it("offers Pause only for an agent wrapped or seen on the computer, never for a harness never wrapped there", async () => {
    const { token, b } = await workspace();
    const h = await enrollHost(token, undefined, ["claude-code"]);
    const html = (await b.page("/console")).html;
    expect(html).toMatch(new RegExp(`aria-label="Pause claude-code on box \\(${h.id}\\)"`));
    for (const never of ["codex", "cursor", "stella"]) {
      expect(html).not.toContain(`aria-label="Pause ${never} on box (${h.id})"`);
      expect(html).not.toContain(`aria-label="Pause ${never} across the workspace"`);
    }
  });
});
