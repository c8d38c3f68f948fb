// npm run bench:spend-page — what the console's Spend page and a tool call's admission cost as a
// workspace's history grows, with the Worker's own code on SQLite (node:sqlite, the engine D1 and a
// Durable Object's storage run): the Spend page's queries (lib/spend.ts `spendSince`, as the page
// calls it) over a workspace whose spend rows were written by the projection consumer's own
// statements, at BENCH_SMALL rows (the floor) and BENCH_SPEND rows; a tool call's admission
// (workspace/tool-meter.ts `reserveCall` with call-count limits, then `settleCall`) with 0 calls in
// the window (the floor) and BENCH_CALLS. BENCH_ROOT runs another tree's code (for example main's,
// `git archive main workers protocol migrations | tar -x -C /tmp/main && ln -s $PWD/node_modules /tmp/main/`)
// for a before/after in the same way.
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { DatabaseSync, type StatementSync } from "node:sqlite";
import { migratedDb } from "./migrated-db.ts";

const ROOT = resolve(process.env.BENCH_ROOT ?? join(import.meta.dirname, "../.."));
const SPEND = Number(process.env.BENCH_SPEND ?? 100_000);
const SMALL = Number(process.env.BENCH_SMALL ?? 1_000);
const CALLS = Number(process.env.BENCH_CALLS ?? 100_000);
const REPEAT = Number(process.env.BENCH_REPEAT ?? 20);
const HOSTS = Number(process.env.BENCH_HOSTS ?? 20);

const { projectionStatements } = await import(join(ROOT, "workers/projection/consume.ts"));
const { spendSince } = await import(join(ROOT, "workers/lib/spend.ts"));
const { migrate } = await import(join(ROOT, "workers/workspace/schema.ts"));
const { reserveCall, settleCall } = await import(join(ROOT, "workers/workspace/tool-meter.ts"));

function prepared(db: DatabaseSync) {
  const cache = new Map<string, StatementSync>();
  return (sql: string, arrays = false) => {
    const s = cache.get(sql) ?? db.prepare(sql);
    cache.set(sql, s);
    s.setReturnArrays(arrays);
    return s;
  };
}

/** D1's binding over node:sqlite: prepare/bind, all/raw/first/run, and batch as one transaction. */
function d1(db: DatabaseSync) {
  const stmt = prepared(db);
  const bound = (sql: string, params: unknown[]) => {
    const p = params as never[];
    return {
      sql,
      params,
      all: async () => ({ results: stmt(sql).all(...p) }),
      raw: async () => stmt(sql, true).all(...p),
      first: async () => stmt(sql).get(...p) ?? null,
      run: async () => {
        stmt(sql).run(...p);
        return { success: true, meta: {} };
      },
    };
  };
  return {
    prepare: (sql: string) => ({ ...bound(sql, []), bind: (...params: unknown[]) => bound(sql, params) }),
    batch: async (list: ReturnType<typeof bound>[]) => {
      db.exec("BEGIN");
      for (const b of list) stmt(b.sql).run(...(b.params as never[]));
      db.exec("COMMIT");
      return [];
    },
  };
}

/** A Durable Object's `storage.sql` over node:sqlite (each statement run at once, as `exec` does). */
function doStorage(db: DatabaseSync) {
  const stmt = prepared(db);
  const sql = {
    exec: (q: string, ...params: unknown[]) => {
      const s = stmt(q);
      const p = params as never[];
      let rows: unknown[] = [];
      if (s.columns().length > 0) rows = s.all(...p);
      else s.run(...p);
      return { toArray: () => rows, one: () => rows[0], [Symbol.iterator]: () => rows[Symbol.iterator]() };
    },
  };
  return { sql, transactionSync: <T>(fn: () => T) => fn() };
}

const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const DAY = 86_400_000;
const now = Date.now();

/** A workspace's spend: runs of 10 spend rows (2 days × 5 models) on BENCH_HOSTS computers × 2 agents, over 30 days. */
async function spendPage(rows: number) {
  const db = migratedDb(ROOT);
  const DB = d1(db);
  const runs = Math.ceil(rows / 10);
  for (let from = 0; from < runs; from += 500) {
    const messages = [];
    for (let r = from; r < Math.min(runs, from + 500); r++) {
      const host = `h${Math.floor(r / 2) % HOSTS}`;
      const first = now - (r % 29) * DAY - DAY;
      const spend = [0, 1].flatMap((d) =>
        [0, 1, 2, 3, 4].map((m) => ({
          runId: `run_${r}`,
          day: new Date(first + d * DAY).toISOString().slice(0, 10),
          vendor: "anthropic",
          model: `model-${m}`,
          priceVersion: "genai-prices@0.1.8",
          workspaceId: "ws",
          hostId: host,
          agent: r % 2 ? "claude-code" : "codex",
          calls: 3,
          unpricedCalls: 0,
          microusd: 1000 + r,
          inputTokens: 100,
          outputTokens: 10,
          cacheReadTokens: 0,
          cacheWriteTokens: 0,
          version: 1,
        })),
      );
      messages.push({ kind: "chain", chain: `run_${r}`, version: 1, run: null, agent: null, spend });
    }
    await DB.batch(projectionStatements(DB, messages));
  }
  const env = { DB };
  await spendSince(env, "ws", now - 29 * DAY);
  const times: number[] = [];
  for (let i = 0; i < REPEAT; i++) {
    const t = performance.now();
    await spendSince(env, "ws", now - 29 * DAY);
    times.push(performance.now() - t);
  }
  const tables = ["spend", "spend_daily"].map((t) => {
    try {
      return (db.prepare(`SELECT count(*) AS n FROM ${t}`).get() as { n: number }).n;
    } catch {
      return null;
    }
  });
  return { ms: median(times), spendRows: tables[0], rollupRows: tables[1] };
}

/** One admission under three call-count limits (and its settle), at `held` counted calls in the window. */
function admission(held: number) {
  const storage = doStorage(new DatabaseSync(":memory:"));
  migrate(storage);
  const call = (id: string) => ({
    id,
    tool: "refund",
    defSha256: "d",
    caller: "gateway",
    hostId: "h1",
    agent: "claude-code",
    runId: "run_1",
    tokenId: null,
    inputSha256: "e",
    inputSize: 2,
  });
  const end = { status: "ok", durationMs: 1, outputSha256: null, outputSize: null, upstreamStatus: 200, scrubbed: false, forwarded: true };
  const t0 = Math.floor(now / 3_600_000) * 3_600_000 + 60_000;
  for (let i = 0; i < held; i++) {
    reserveCall(storage.sql, call(`seed_${i}`), { costMicrousd: 0, limits: [] }, [], t0);
    settleCall(storage.sql, { ...end, id: `seed_${i}` }, t0);
  }
  const limits = [
    { id: "ws-hour", scope: "workspace", window: "hour", max_calls: 1e9 },
    { id: "agent-day", scope: "agent", window: "day", max_calls: 1e9 },
    { id: "run", scope: "run", window: "run", max_calls: 1e9 },
  ];
  const times: number[] = [];
  for (let i = 0; i < REPEAT * 10; i++) {
    const t = performance.now();
    const { answer } = reserveCall(storage.sql, call(`c_${i}`), { costMicrousd: 0, limits }, [], t0);
    settleCall(storage.sql, { ...end, id: `c_${i}` }, t0);
    times.push(performance.now() - t);
    if (!answer.granted) throw new Error("refused");
  }
  return { ms: median(times) };
}

const [pageFloor, page] = [await spendPage(SMALL), await spendPage(SPEND)];
const [admitFloor, admit] = [admission(0), admission(CALLS)];
const fmt = (n: number) => n.toFixed(3).padStart(9);
console.log(`code: ${ROOT}`);
console.log("what                                   | rows in spend | rows in spend_daily | median ms");
console.log(
  `Spend page @ ${String(SMALL).padEnd(7)} spend rows (floor)  | ${String(pageFloor.spendRows).padStart(13)} | ${String(pageFloor.rollupRows ?? "-").padStart(19)} | ${fmt(pageFloor.ms)}`,
);
console.log(
  `Spend page @ ${String(SPEND).padEnd(7)} spend rows          | ${String(page.spendRows).padStart(13)} | ${String(page.rollupRows ?? "-").padStart(19)} | ${fmt(page.ms)}`,
);
console.log(`tool admission @ 0 calls in window (floor)  |               |                     | ${fmt(admitFloor.ms)}`);
console.log(`tool admission @ ${String(CALLS).padEnd(7)} calls in window |               |                     | ${fmt(admit.ms)}`);
console.log(
  `RESULT ${JSON.stringify({
    spend_rows: SPEND,
    spend_page_ms: page.ms,
    spend_page_floor_ms: pageFloor.ms,
    spend_page_ratio: page.ms / pageFloor.ms,
    rollup_rows: page.rollupRows,
    calls_in_window: CALLS,
    admission_ms: admit.ms,
    admission_floor_ms: admitFloor.ms,
    admission_ratio: admit.ms / admitFloor.ms,
  })}`,
);
