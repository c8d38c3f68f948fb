import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { AppError } from "./errors.ts";
import { health } from "./routes/health.ts";

export const app = new Hono<{ Bindings: Env }>();

app.route("/", health);

app.notFound((c) => c.json({ error: "not_found", message: "No such route." }, 404));

app.onError((err, c) => {
  if (err instanceof AppError) return c.json({ error: err.code, message: err.message }, err.status);
  if (err instanceof HTTPException) return c.json({ error: "http_error", message: err.message || "Request refused." }, err.status);
  console.error("unhandled error", err);
  return c.json({ error: "internal", message: "Something went wrong on the server." }, 500);
});
