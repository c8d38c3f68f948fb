// Usage: node main.ts --payments http://127.0.0.1:4242 ORDER:CENTS [ORDER:CENTS...]
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { RefundAgent } from "./agent.ts";

const { values, positionals } = parseArgs({ options: { payments: { type: "string" } }, allowPositionals: true });
if (!values.payments || positionals.length === 0) {
  console.error("usage: node main.ts --payments URL ORDER:CENTS [ORDER:CENTS...]");
  process.exit(2);
}
const agent = new RefundAgent({ payments: values.payments, session: `refunds-${randomUUID()}` });
try {
  agent.start();
  for (const p of positionals) {
    const [order, cents] = p.split(":");
    const outcome = await agent.handle({ order: order!, amount_cents: Number(cents), message: `Please refund order ${order}.` });
    console.log(JSON.stringify({ order, ...outcome }));
  }
  agent.end();
} catch (err) {
  // Failing closed: nothing more reaches the payments API, and the person running it reads why.
  const why =
    (err as Error).cause instanceof Error
      ? `${(err as Error).message} (${((err as Error).cause as Error).message})`
      : (err as Error).message;
  console.error(`refund agent stopped, no further refund issued: ${why}`);
  process.exitCode = 1;
}
