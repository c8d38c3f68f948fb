import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { type AppEnv, readBodyFirst } from "./request-body.ts";
import { consoleApp } from "./console/index.tsx";
import { AppError } from "./errors.ts";
import { QuotaError } from "./lib/quotas.ts";
import { agents } from "./routes/agents.ts";
import { bodies, operatorBodies } from "./routes/bodies.ts";
import { budget } from "./routes/budget.ts";
import { device } from "./routes/device.ts";
import { enroll } from "./routes/enroll.ts";
import { health } from "./routes/health.ts";
import { hostLifecycle, hostRuns, hosts, hostSelf } from "./routes/hosts.ts";
import { ingest } from "./routes/ingest.ts";
import { keys } from "./routes/keys.ts";
import { policy } from "./routes/policy.ts";
import { push } from "./routes/push.ts";
import { runs } from "./routes/runs.ts";
import { spend } from "./routes/spend.ts";
import { tokens } from "./routes/tokens.ts";
import { workspaces } from "./routes/workspaces.ts";
import { mcpEndpoint } from "./tools/endpoint.ts";
import { tools } from "./tools/routes.ts";

export const app = new Hono<AppEnv>();

// Before any route: every body is read under its route's limit before authentication or parsing.
app.use("*", readBodyFirst);

app.route("/", health);
app.route("/", keys);
app.route("/", enroll);
app.route("/", device);
app.route("/", ingest);
app.route("/", bodies);
app.route("/", operatorBodies);
app.route("/", policy);
app.route("/", push);
app.route("/", budget);
app.route("/", hostSelf);
app.route("/", hostLifecycle);
app.route("/", hostRuns);
app.route("/", hosts);
app.route("/", agents);
app.route("/", runs);
app.route("/", spend);
app.route("/", tokens);
app.route("/", workspaces);
app.route("/", mcpEndpoint);
app.route("/", tools);
app.route("/", consoleApp);

app.notFound((c) => c.json({ error: "not_found", message: "No such route." }, 404));

app.onError((err, c) => {
  if (err instanceof AppError) {
    if (err.status >= 500) console.error("server error", err.code, err.cause ?? err);
    if (err instanceof QuotaError) c.header("Retry-After", String(err.retryAfterS));
    return c.json(
      { error: err.code, message: err.message, ...(err.issues !== undefined ? { issues: err.issues } : {}), ...err.fields },
      err.status,
    );
  }
  if (err instanceof HTTPException) {
    const code = err.status === 400 ? "invalid_request" : err.status === 401 ? "unauthorized" : "http_error";
    return c.json({ error: code, message: err.message || "Request refused." }, err.status);
  }
  console.error("unhandled error", err);
  return c.json({ error: "internal", message: "Something went wrong on the server." }, 500);
});
