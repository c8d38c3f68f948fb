// Usage: node payments-server.ts --key KEY [--port 4242]: the fake payments API on its own, for main.ts by hand.
// The key is the one an operator gives the workspace's issue_refund tool (README.md); the agent never holds it.
import { parseArgs } from "node:util";
import { startPayments } from "./payments.ts";

const { values } = parseArgs({ options: { port: { type: "string", default: "4242" }, key: { type: "string" } } });
if (!values.key) {
  console.error("payments: --key KEY is required (the API key the workspace's issue_refund tool holds)");
  process.exit(2);
}
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`payments: --port takes a port number, not ${JSON.stringify(values.port)}`);
  process.exit(2);
}
try {
  const payments = await startPayments(values.key, port);
  console.log(`fake payments API on ${payments.url} (POST /v1/refunds, GET /v1/refunds lists them); Ctrl-C stops it`);
  process.on("SIGINT", () => payments.close().then(() => process.exit(0)));
} catch (err) {
  console.error(
    `payments: cannot listen on 127.0.0.1:${port}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}; try --port N`,
  );
  process.exit(1);
}
