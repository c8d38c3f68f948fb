import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { AppError } from "./errors.ts";
import { agents } from "./routes/agents.ts";
import { bodies } from "./routes/bodies.ts";
import { enroll } from "./routes/enroll.ts";
import { health } from "./routes/health.ts";
import { hostRuns, hosts, hostSelf } from "./routes/hosts.ts";
import { ingest } from "./routes/ingest.ts";
import { keys } from "./routes/keys.ts";
import { policy } from "./routes/policy.ts";
import { runs } from "./routes/runs.ts";
import { tokens } from "./routes/tokens.ts";
import { workspaces } from "./routes/workspaces.ts";

export const app = new Hono<{ Bindings: Env }>();

app.route("/", health);
app.route("/", keys);
app.route("/", enroll);
app.route("/", ingest);
app.route("/", bodies);
app.route("/", policy);
app.route("/", hostSelf);
app.route("/", hostRuns);
app.route("/", hosts);
app.route("/", agents);
app.route("/", runs);
app.route("/", tokens);
app.route("/", workspaces);

app.notFound((c) => c.json({ error: "not_found", message: "No such route." }, 404));

app.onError((err, c) => {
  if (err instanceof AppError) {
    if (err.status >= 500) console.error("server error", err.code, err.cause ?? err);
    return c.json({ error: err.code, message: err.message, ...(err.issues !== undefined ? { issues: err.issues } : {}) }, err.status);
  }
  if (err instanceof HTTPException) {
    const code = err.status === 400 ? "invalid_request" : err.status === 401 ? "unauthorized" : "http_error";
    return c.json({ error: code, message: err.message || "Request refused." }, err.status);
  }
  console.error("unhandled error", err);
  return c.json({ error: "internal", message: "Something went wrong on the server." }, 500);
});
