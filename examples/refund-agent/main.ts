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
agent.start();
for (const p of positionals) {
  const [order, cents] = p.split(":");
  const outcome = await agent.handle({ order: order!, amount_cents: Number(cents), message: `Please refund order ${order}.` });
  console.log(JSON.stringify({ order, ...outcome }));
}
agent.end();
