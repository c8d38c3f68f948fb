import { beforeAll, describe, expect, it } from "vitest";
import { PRICE_TABLE_VERSION, priceCall } from "../../workers/spend/price.ts";
import { enrollHost, ingest, op, seedWorkspace, TestRun, type TestHost } from "./support.ts";

let token: string;
let host: TestHost;

beforeAll(async () => {
  ({ token } = await seedWorkspace());
  host = await enrollHost(token, undefined, ["claude-code", "codex"]);
});

const today = () => new Date().toISOString().slice(0, 10);

describe("the server prices every model call from the usage the record holds", () => {
  it("prices with the table's rates, counting the record's uncached input_tokens plus its cache reads and writes as the table's input", () => {
    const at = new Date();
    expect(priceCall("anthropic", "claude-sonnet-4-5", { input_tokens: 1000, output_tokens: 100 }, at)).toBe(4500);
    // $3/M input, $0.30/M cache read, $3.75/M cache write, $15/M output.
    const cached = { input_tokens: 1000, cache_read_tokens: 2000, cache_write_tokens: 1000, output_tokens: 100 };
    expect(priceCall("anthropic", "claude-sonnet-4-5", cached, at)).toBe(3000 + 600 + 3750 + 1500);
    // Codex's model: $1.25/M input, $0.125/M cached, $10/M output.
    expect(priceCall("openai", "gpt-5-codex", { input_tokens: 1000, cache_read_tokens: 1000, output_tokens: 100 }, at)).toBe(
      1250 + 125 + 1000,
    );
    expect(priceCall("anthropic", "no-such-model", { input_tokens: 1, output_tokens: 1 }, at)).toBeNull();
    expect(priceCall("no-such-vendor", "claude-sonnet-4-5", { input_tokens: 1, output_tokens: 1 }, at)).toBeNull();
  });

  it("puts the server's price on the run, ignores the computer's own cost claim, and counts unknown models as unpriced, not $0", async () => {
    const run = new TestRun(host);
    run.start();
    run.llm({ claim: 1 });
    run.llm({ vendor: "openai", model: "gpt-5-codex", usage: { input_tokens: 1000, cache_read_tokens: 1000, output_tokens: 100 } });
    run.llm({ model: "claude-imaginary-9", path: "transcript" });
    await ingest(host, [run.part()]);
    const view = (await (await op(token, `/v1/runs/${run.chain}`)).json()) as Record<string, unknown>;
    expect(view).toMatchObject({ spend_microusd: 4500 + 2375, unpriced_calls: 1 });
    const byModel = (view.spend as { by_model: Record<string, unknown>[] }).by_model;
    expect(byModel).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          vendor: "anthropic",
          model: "claude-sonnet-4-5",
          microusd: 4500,
          calls: 1,
          price_versions: [PRICE_TABLE_VERSION],
        }),
        expect.objectContaining({ vendor: "openai", model: "gpt-5-codex", microusd: 2375, cache_read_tokens: 1000 }),
        expect.objectContaining({ model: "claude-imaginary-9", microusd: null, calls: 1, unpriced_calls: 1, price_versions: [] }),
      ]),
    );
  });

  it("counts a batch sent twice, or twice at once, once", async () => {
    const run = new TestRun(host);
    run.start();
    run.llm();
    run.llm();
    const part = run.part();
    await Promise.all([ingest(host, [part]), ingest(host, [part])]);
    await ingest(host, [part]);
    const rows = (await (await op(token, `/v1/spend?run=${run.chain}&group_by=run`)).json()) as { rows: Record<string, unknown>[] };
    expect(rows.rows).toEqual([expect.objectContaining({ run: run.chain, microusd: 9000, calls: 2 })]);
  });
});

describe("GET /v1/spend", () => {
  it("groups by host, agent, model, day and month, within a day range", async () => {
    const ws = await seedWorkspace();
    const h = await enrollHost(ws.token, undefined, ["claude-code", "codex"]);
    const a = new TestRun(h, "a", "claude-code");
    a.llm();
    a.llm();
    const b = new TestRun(h, "b", "codex");
    b.llm({ vendor: "openai", model: "gpt-5-codex", usage: { input_tokens: 1000, output_tokens: 100 } });
    await ingest(h, [a.part(), b.part()]);
    const get = async (q: string) => {
      const res = await op(ws.token, `/v1/spend${q}`);
      expect(res.status, q).toBe(200);
      return ((await res.json()) as { rows: Record<string, unknown>[] }).rows;
    };
    expect(await get("")).toEqual([expect.objectContaining({ microusd: 9000 + 2250, calls: 3, unpriced_calls: 0 })]);
    expect(await get("?group_by=agent")).toEqual([
      expect.objectContaining({ agent: "claude-code", microusd: 9000 }),
      expect.objectContaining({ agent: "codex", microusd: 2250 }),
    ]);
    expect(await get("?group_by=host,month")).toEqual([
      expect.objectContaining({ host: h.id, month: today().slice(0, 7), microusd: 11_250 }),
    ]);
    expect(await get(`?group_by=day&from=${today()}&to=${today()}`)).toEqual([expect.objectContaining({ day: today(), microusd: 11_250 })]);
    expect(await get("?from=2000-01-01&to=2000-01-31")).toEqual([]);
    expect(await get(`?group_by=model&agent=codex`)).toEqual([expect.objectContaining({ vendor: "openai", model: "gpt-5-codex" })]);
  });

  it("refuses a bad group, a bad day or a range backwards with 400 naming the field", async () => {
    for (const [q, field] of [
      ["?group_by=planet", "group_by"],
      ["?group_by=run,run", "group_by"],
      ["?from=2026-13-01", "from"],
      [`?from=2026-02-01&to=2026-01-01`, "from"],
      ["?limit=0", "limit"],
    ] as const) {
      const res = await op(token, `/v1/spend${q}`);
      expect(res.status, q).toBe(400);
      const body = (await res.json()) as { error: string; issues: { fieldErrors: Record<string, unknown> } };
      expect(body.error).toBe("invalid_request");
      expect(Object.keys(body.issues.fieldErrors), q).toContain(field);
    }
  });
});
