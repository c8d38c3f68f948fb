/**
 * Counts what each component asks of the platform, for `npm run bench:fleet` and the tests that
 * hold a request to its budget: D1 statements, Durable Object calls by namespace and method, Queue
 * messages, each under the component that made it (the request path, an object class, the
 * projection's consumer, the cron). On only when `OXAGEN_METER` is "1"; otherwise the bindings are
 * handed on untouched. Counts live in the isolate (under `wrangler dev` the Worker and its objects
 * share one), and read and reset through `GET /__meter`.
 */

const counts = new Map<string, number>();
/** The D1 statements made, with their parameters (the latest 2,000), for the query-plan test. */
const statements: { who: string; sql: string; params: unknown[] }[] = [];

function note(who: string, s: { sql: string; params: unknown[] } | undefined): void {
  if (!s) return;
  statements.push({ who, ...s });
  if (statements.length > 2000) statements.shift();
}

/** The D1 statements made so far (SQL and parameters), by component. */
export function meterStatements(reset = false): { who: string; sql: string; params: unknown[] }[] {
  const out = [...statements];
  if (reset) statements.length = 0;
  return out;
}

function add(key: string, n = 1): void {
  counts.set(key, (counts.get(key) ?? 0) + n);
}

/** The counts so far, by key (`component.d1_statements`, `component.do.NS.method`, `…ms`, `component.queue_messages`). */
export function meterCounts(reset = false): Record<string, number> {
  const out = Object.fromEntries([...counts].sort(([a], [b]) => (a < b ? -1 : 1)));
  if (reset) counts.clear();
  return out;
}

/** Whether the meter is on. */
export function meterOn(env: Pick<Env, "OXAGEN_METER">): boolean {
  return (env.OXAGEN_METER as string) === "1";
}

// Each counted statement's own, for the batch, which takes only the binding's statements; and its text.
const raw = new WeakMap<object, D1PreparedStatement>();
const text = new WeakMap<object, { sql: string; params: unknown[] }>();

function meterD1(db: D1Database, who: string): D1Database {
  const statement = (s: D1PreparedStatement, sql: string, params: unknown[]): D1PreparedStatement => {
    const p = new Proxy(s, {
      get(target, prop) {
        const v = Reflect.get(target, prop, target) as unknown;
        if (typeof v !== "function") return v;
        if (prop === "bind")
          return (...args: unknown[]) => statement((v as (...a: unknown[]) => D1PreparedStatement).apply(target, args), sql, args);
        if (prop === "run" || prop === "all" || prop === "first" || prop === "raw")
          return (...args: unknown[]) => {
            add(`${who}.d1_statements`);
            note(who, { sql, params });
            return (v as (...a: unknown[]) => unknown).apply(target, args);
          };
        return (v as (...a: unknown[]) => unknown).bind(target);
      },
    });
    raw.set(p, s);
    text.set(p, { sql, params });
    return p;
  };
  const unwrap = (s: D1PreparedStatement) => raw.get(s) ?? s;
  return new Proxy(db, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target) as unknown;
      if (prop === "prepare") return (q: string) => statement(target.prepare(q), q, []);
      if (prop === "batch")
        return (list: D1PreparedStatement[]) => {
          add(`${who}.d1_statements`, list.length);
          for (const s of list) note(who, text.get(s));
          add(`${who}.d1_batches`);
          return target.batch(list.map(unwrap));
        };
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

function meterNamespace<T extends Rpc.DurableObjectBranded | undefined>(ns: DurableObjectNamespace<T>, name: string, who: string) {
  return new Proxy(ns, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target) as unknown;
      if (prop !== "get") return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      return (id: DurableObjectId) => {
        const stub = target.get(id);
        return new Proxy(stub, {
          get(s, method) {
            const m = Reflect.get(s, method, s) as unknown;
            if (typeof method !== "string" || method === "then" || typeof m !== "function") return m;
            return async (...args: unknown[]) => {
              const key = `${who}.do.${name}.${method}`;
              add(key);
              const t0 = performance.now();
              try {
                // Reflect.apply: on an RPC stub, `.apply` would itself be a remote method.
                return await Reflect.apply(m as (...a: unknown[]) => Promise<unknown>, s, args);
              } finally {
                add(`${key}.ms`, performance.now() - t0);
              }
            };
          },
        });
      };
    },
  });
}

function meterQueue(q: Queue, who: string): Queue {
  return new Proxy(q, {
    get(target, prop) {
      if (prop === "send")
        return (body: unknown, opts?: QueueSendOptions) => {
          add(`${who}.queue_messages`);
          return target.send(body, opts);
        };
      if (prop === "sendBatch")
        return (msgs: Iterable<MessageSendRequest>, opts?: QueueSendBatchOptions) => {
          const list = [...msgs];
          add(`${who}.queue_messages`, list.length);
          return target.sendBatch(list, opts);
        };
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

/** The bindings, counted under `who` when the meter is on (else `env` itself). */
export function metered(env: Env, who: string): Env {
  if (!meterOn(env)) return env;
  return {
    ...env,
    DB: meterD1(env.DB, who),
    CHAINS: meterNamespace(env.CHAINS, "CHAINS", who),
    HOSTS: meterNamespace(env.HOSTS, "HOSTS", who),
    WORKSPACES: meterNamespace(env.WORKSPACES, "WORKSPACES", who),
    PROJECTION: meterQueue(env.PROJECTION, who),
  };
}
