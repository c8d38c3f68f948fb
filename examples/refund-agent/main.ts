// Usage: node main.ts ORDER:CENTS [ORDER:CENTS...] on an enrolled computer whose workspace has the
// issue_refund tool (README.md): its calls go through this computer's gateway.
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { gatewayOf, RefundAgent } from "./agent.ts";

const { positionals } = parseArgs({ options: {}, allowPositionals: true });
if (positionals.length === 0) {
  console.error("usage: node main.ts ORDER:CENTS [ORDER:CENTS...]");
  process.exit(2);
}
try {
  const agent = new RefundAgent({ gateway: gatewayOf(), session: `refunds-${randomUUID()}` });
  agent.start();
  for (const p of positionals) {
    const [order, cents] = p.split(":");
    const outcome = await agent.handle({ order: order!, amount_cents: Number(cents), message: `Please refund order ${order}.` });
    console.log(JSON.stringify({ order, ...outcome }));
  }
  await agent.end();
} catch (err) {
  // Failing closed: nothing more reaches the payments API, and the person running it reads why.
  const why =
    (err as Error).cause instanceof Error
      ? `${(err as Error).message} (${((err as Error).cause as Error).message})`
      : (err as Error).message;
  console.error(`refund agent stopped, no further refund issued: ${why}`);
  process.exitCode = 1;
}
