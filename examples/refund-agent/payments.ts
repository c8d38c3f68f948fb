// A fake payments API on loopback: POST /v1/refunds issues a refund, GET /v1/refunds lists them,
// each with its API key (`authorization: Bearer <key>`, else 401). It stands in for Stripe; what
// reaches it is what the agent really did.
import { createServer } from "node:http";

export interface IssuedRefund {
  id: string;
  order: string;
  amount_cents: number;
}

export interface Payments {
  url: string;
  /** Every refund that reached the API, in order. */
  refunds: IssuedRefund[];
  /** Requests refused for a missing or wrong key. */
  unauthorized: number;
  close: () => Promise<void>;
}

/** Starts the fake API on 127.0.0.1 (`port` 0: any free port), taking requests with `key` only. */
export async function startPayments(key: string, port = 0): Promise<Payments> {
  const refunds: IssuedRefund[] = [];
  const payments: Payments = { url: "", refunds, unauthorized: 0, close: () => new Promise<void>((r) => server.close(() => r())) };
  const server = createServer((req, res) => {
    const answer = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (req.headers.authorization !== `Bearer ${key}`) {
      payments.unauthorized++;
      req.resume();
      return answer(401, { error: "invalid_api_key" });
    }
    if (req.url !== "/v1/refunds") return answer(404, { error: "not_found" });
    if (req.method === "GET") return answer(200, { refunds });
    if (req.method !== "POST") return answer(405, { error: "method_not_allowed" });
    let text = "";
    req.setEncoding("utf8").on("data", (d: string) => (text += d));
    req.on("end", () => {
      let body: { order?: unknown; amount_cents?: unknown };
      try {
        body = JSON.parse(text) as typeof body;
      } catch {
        return answer(400, { error: "invalid_json" });
      }
      if (typeof body.order !== "string" || !Number.isSafeInteger(body.amount_cents) || (body.amount_cents as number) <= 0)
        return answer(400, { error: "invalid_refund" });
      const refund = { id: `re_${refunds.length + 1}`, order: body.order, amount_cents: body.amount_cents as number };
      refunds.push(refund);
      answer(201, refund);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", resolve);
  });
  payments.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return payments;
}
