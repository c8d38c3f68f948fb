// The runs list and a run's page as an operator reads them after an incident: each run's outcome
// and why, its computer by name, when it started, how long it ran, its model calls, cost and gaps;
// the timeline's tokens and cost per call and errors with their reason; bodies pretty-printed.
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { bodyRef, BODY_HEADERS } from "../../protocol/index.ts";
import { signedIn } from "./console-browser.ts";
import { enrollHost, hostCall, ingest, seedWorkspace, TestRun, type TestHost } from "./support.ts";

let token: string;
let host: TestHost;

beforeAll(async () => {
  ({ token } = await seedWorkspace());
  host = await enrollHost(token);
});

const gatewayError = { path: "gateway", code: "upstream_unreachable", forwarded: false, status: 502, vendor: "anthropic", model: "m" };
/** The text of a table row whose first cell is the run's link, tags stripped. */
const rowText = (html: string, chain: string) =>
  new RegExp(`<tr><th scope="row"><a href="/console/runs/${chain}"[^]*?</tr>`)
    .exec(html)?.[0]
    .replace(/<[^>]+>/g, " ")
    .replaceAll("&#39;", "'")
    .replace(/\s+/g, " ")
    .trim();

describe("the runs list", () => {
  it("shows each run's outcome and why, agent, computer name, start, duration, model calls, cost and gaps", async () => {
    const failed = new TestRun(host);
    failed.start();
    failed.add("error", gatewayError);
    failed.add("error", gatewayError);
    failed.stop();
    const good = new TestRun(host);
    good.start();
    good.llm();
    good.stop();
    await ingest(host, [failed.part(), good.part()]);
    const b = await signedIn(token);
    const { html } = await b.page(`/console/runs?host=${host.id}`);
    expect(html).toMatch(
      /<th scope="col">Outcome<\/th><th scope="col">Harness \/ agent<\/th><th scope="col">Computer<\/th><th scope="col">Started<\/th>/,
    );
    expect(rowText(html, failed.chain)).toMatch(
      /^run_[0-9a-f]{8}… failed all 2 of the run's model calls failed; the last: the gateway could not reach the vendor, answering 502; not forwarded claude-code box \d{4}-\d\d-\d\d [\d:]+Z 3 s 2 \(2 failed\) \$0\.00 0$/,
    );
    expect(rowText(html, good.chain)).toMatch(
      /^run_[0-9a-f]{8}… completed the session ended, and no frame says it failed or was stopped claude-code box .* 2 s 1 \$0\.0045 0$/,
    );
    // The computer's name, not its id, in the Computer column (the id in its title).
    expect(html).toContain(`<td title="${host.id}">box</td>`);
  });
});

describe("a run's page", () => {
  it("shows the outcome with its reason, tokens and cost per model call, errors with their reason, and no verify line while live", async () => {
    const run = new TestRun(host);
    run.start();
    run.llm({ usage: { input_tokens: 1000, output_tokens: 100, cache_read_tokens: 2000 } });
    run.add("error", gatewayError);
    run.lock();
    await ingest(host, [run.part(run.frames, run.locks)]);
    const b = await signedIn(token);
    const { html } = await b.page(`/console/runs/${run.chain}`);
    expect(html).toContain(
      '<dt>Outcome</dt><dd><span class="state state-running">running</span>: no frame so far says the run failed or was stopped',
    );
    expect(html).toContain("1 lock,");
    expect(html).toContain("2 model calls, 1 failed");
    // A call's tokens and its cost, priced by the server's own rule at the frame's receipt.
    expect(html).toMatch(/<td>1,000 in · 100 out · 2,000 cache read · \$0\.00\d\d<\/td>/);
    expect(html).toContain("the gateway could not reach the vendor, answering 502; not forwarded");
    expect(html).not.toContain("status 502");
    // A live run cannot be exported: the page offers no verify line for it.
    expect(html).not.toContain('id="verify"');
    expect(html).not.toContain("oxagen verify");
    // A gateway call not yet under a lock: the tier's reason does not say none passed the gateway.
    expect(html).not.toContain("no model call passed the gateway");
  });

  it("says what the vendor answered a failed call, from the response body the workspace kept", async () => {
    const run = new TestRun(host);
    const answer = JSON.stringify({ type: "error", error: { type: "overloaded_error", message: "Overloaded, try later" } });
    const ref = bodyRef("llm_response", answer, true);
    run.start();
    run.llm({ status: 529, usage: { input_tokens: 0, output_tokens: 0 }, bodies: [ref] });
    await ingest(host, [run.part()]);
    const up = await hostCall(host, "PUT", `/v1/bodies/${ref.sha256}`, answer, {
      "content-type": "application/octet-stream",
      [BODY_HEADERS.run]: run.chain,
      [BODY_HEADERS.role]: "llm_response",
    });
    expect(up.status).toBe(201);
    const b = await signedIn(token);
    const { html } = await b.page(`/console/runs/${run.chain}`);
    expect(html).toContain("the vendor answered 529: Overloaded, try later");
    expect(html).toContain('<tr id="seq-1" class="bad">');
  });

  it("shows a JSON body pretty-printed, each part folded in a <details>, and the stored text beside it", async () => {
    const run = new TestRun(host);
    const request = JSON.stringify({
      model: "claude-sonnet-4-5",
      max_tokens: 1000,
      system: "x".repeat(400),
      messages: [
        { role: "user", content: "y".repeat(300) },
        { role: "assistant", content: [{ type: "text", text: "z".repeat(300) }] },
      ],
    });
    const ref = bodyRef("llm_request", request, true);
    run.start();
    run.llm({ status: 200, bodies: [ref] });
    await ingest(host, [run.part()]);
    await env.BODIES.put(`bodies/${host.workspaceId}/${ref.sha256}`, request);
    const b = await signedIn(token);
    const { res, html } = await b.page(`/console/runs/${run.chain}/frames/1/bodies/0`);
    expect(res.status).toBe(200);
    expect(html).toContain('<p class="mono"><strong>model</strong>: &quot;claude-sonnet-4-5&quot;</p>');
    expect(html).toMatch(/<details open=""><summary><strong class="mono">messages<\/strong> {2}<span class="muted">\(2 items, /);
    expect(html).toMatch(/<details><summary><strong class="mono">\[1\]<\/strong> assistant <span class="muted">/);
    expect(html).toContain("<summary>The text as stored</summary>");
    expect(html).toContain("&quot;content&quot;: &quot;yyyy");
  });
});
