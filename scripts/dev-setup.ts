// First-run local setup shared by `npm start` and the ingest benchmark: the signing key in
// .dev.vars, D1 migrations, and a demo workspace with an operator token in local D1.
import { spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const ROOT = join(import.meta.dirname, "..");
export const WRANGLER = join(ROOT, "node_modules/wrangler/bin/wrangler.js");
const DEV_VARS = join(ROOT, ".dev.vars");
const STATE = join(ROOT, ".wrangler/oxagen-dev.json");

export interface DevState {
  workspace: string;
  token: string;
}

/** The local server's URL on a loopback port: also its origin, the one enrolled hosts sign for. */
export function localUrl(port: number): string {
  return `http://127.0.0.1:${port}`;
}

/**
 * The arguments of `wrangler dev` serving on a loopback port, with `OXAGEN_ORIGIN` set to that
 * address so the Worker checks host signatures against the origin collectors enroll with
 * (docs/operations.md, "The server's origin"); `extra` goes after (`--persist-to`, more `--var`s).
 */
export function devArgs(port: number, extra: string[] = []): string[] {
  return [WRANGLER, "dev", "--ip", "127.0.0.1", "--port", String(port), "--var", `OXAGEN_ORIGIN:${localUrl(port)}`, ...extra];
}

/** Runs wrangler with this Node, failing loudly (`config`: another wrangler.toml than the repo's). */
export function wrangler(args: string[], opts: { quiet?: boolean; persistTo?: string; config?: string } = {}): void {
  const extra = [...(opts.persistTo ? ["--persist-to", opts.persistTo] : []), ...(opts.config ? ["--config", opts.config] : [])];
  const res = spawnSync(process.execPath, [WRANGLER, ...args, ...extra], {
    cwd: ROOT,
    stdio: opts.quiet ? "pipe" : "inherit",
    env: { ...process.env, CI: "1" },
  });
  if (res.status !== 0) {
    if (opts.quiet) process.stderr.write(`${res.stdout}${res.stderr}`);
    throw new Error(`wrangler ${args.join(" ")} failed (${res.status})`);
  }
}

/**
 * Writes into .dev.vars the dev secrets it does not hold yet: a fresh Ed25519 seed
 * (OXAGEN_SIGNING_KEY) and a fresh AES-256 key for tool credentials (OXAGEN_TOOLS_KEY). Answers
 * the names it wrote.
 */
export function ensureDevSecrets(): string[] {
  let current = existsSync(DEV_VARS) ? readFileSync(DEV_VARS, "utf8") : "";
  const written: string[] = [];
  for (const name of ["OXAGEN_SIGNING_KEY", "OXAGEN_TOOLS_KEY"]) {
    if (new RegExp(`^${name}=[0-9a-f]{64}$`, "m").test(current)) continue;
    current = `${current}${current && !current.endsWith("\n") ? "\n" : ""}${name}=${randomBytes(32).toString("hex")}\n`;
    written.push(name);
  }
  if (written.length > 0) writeFileSync(DEV_VARS, current, { mode: 0o600 });
  return written;
}

/** Applies D1 migrations and seeds the demo workspace and token (idempotent: INSERT OR IGNORE). */
export function ensureDatabase(persistTo?: string, statePath = STATE, config?: string): DevState {
  wrangler(["d1", "migrations", "apply", "DB", "--local"], { quiet: true, persistTo, ...(config ? { config } : {}) });
  let state: DevState;
  if (existsSync(statePath)) state = JSON.parse(readFileSync(statePath, "utf8")) as DevState;
  else {
    state = { workspace: "ws_demo", token: `oxo_${randomBytes(8).toString("hex")}_${randomBytes(24).toString("hex")}` };
    mkdirSync(join(statePath, ".."), { recursive: true });
    writeFileSync(statePath, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  }
  const [, id, secret] = state.token.split("_") as [string, string, string];
  const hash = createHash("sha256").update(secret).digest("hex");
  const now = Date.now();
  const roles = JSON.stringify(["prompt", "tool_input", "tool_output", "message", "llm_request", "llm_response", "error"]).replaceAll(
    "'",
    "''",
  );
  const sql = [
    `INSERT OR IGNORE INTO workspaces (id, name, retention_mode, retention_keep, mode, created_ms) VALUES ('${state.workspace}', 'Demo workspace', 'keep', '${roles}', 'enforce', ${now});`,
    `INSERT OR IGNORE INTO operator_tokens (id, workspace_id, name, secret_hash, created_ms) VALUES ('${id}', '${state.workspace}', 'local dev', '${hash}', ${now});`,
  ].join(" ");
  wrangler(["d1", "execute", "DB", "--local", "--command", sql], { quiet: true, persistTo, ...(config ? { config } : {}) });
  return state;
}

/** A fresh one-time enrollment token (oxe_...), made with the operator token through the API. */
export async function enrollmentToken(url: string, operatorToken: string, ttlMinutes = 24 * 60): Promise<string> {
  const res = await fetch(`${url}/v1/enrollment-tokens`, {
    method: "POST",
    headers: { authorization: `Bearer ${operatorToken}`, "content-type": "application/json" },
    body: JSON.stringify({ ttl_minutes: ttlMinutes }),
  });
  const body = (await res.json().catch(() => null)) as { token?: unknown; message?: unknown } | null;
  if (res.status !== 201 || typeof body?.token !== "string")
    throw new Error(`POST /v1/enrollment-tokens: HTTP ${res.status} ${String(body?.message ?? "")}`);
  return body.token;
}

/**
 * The local server's port, one choice for `npm start` (which listens there) and `npm run demo`
 * (which talks to it): PORT, 8787 unless set.
 */
export function devPort(): number {
  const port = Number(process.env.PORT ?? 8787);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`PORT=${process.env.PORT} is not a port number (1-65535)`);
  return port;
}

/** The local server's URL: OXAGEN_URL when set (another server), else 127.0.0.1 on {@link devPort}. */
export function devUrl(): string {
  return process.env.OXAGEN_URL ?? localUrl(devPort());
}

/** The command a developer pastes to enroll their computer against this server and wrap Claude Code. */
export function enrollLine(url: string, token: string): string {
  return `tacho enroll --server ${url} --token ${token} --harness claude-code`;
}

/** Polls GET /healthz until it answers 200. */
export async function waitHealthy(url: string, timeoutMs = 120_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    try {
      const res = await fetch(`${url}/healthz`);
      if (res.ok) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`${url}/healthz did not answer within ${timeoutMs / 1000} s`);
}
