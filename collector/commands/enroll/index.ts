import { hostname } from "node:os";
import { bytesToHex, EnrollAnswer, ErrorAnswer, fromHex, keyIdFor, newSecretKey, publicKeyOf, ROUTES } from "../../../protocol/index.ts";
import { applyHarnesses, checkHarnessConfigs, type HarnessResult } from "../../harnesses/apply.ts";
import { harnessList } from "../../harnesses/index.ts";
import { parse } from "../../lib/args.ts";
import { ExitError, UsageError } from "../../lib/errors.ts";
import { useNodeCrypto } from "../../lib/node-crypto.ts";
import { readHost, statePath, withHookSecret, writeHost, type HostConfig } from "../../lib/state.ts";
import { fetchPolicy } from "../../recorder/policy-cache.ts";

const USAGE = "usage: tacho enroll --server URL --token TOKEN --harness LIST [--workspace ID] [--hooks-port N] [--gateway-port N] [--json]";
export const DEFAULT_PORTS = { hooks: 47110, gateway: 47111 } as const;

export interface EnrollOptions {
  program: string;
  args: string[];
  /** `oxagen agent enroll` wraps no harness unless asked. */
  harnessRequired: boolean;
}

export async function enroll(args: string[]): Promise<number> {
  return enrollWith({ program: "tacho enroll", args, harnessRequired: true });
}

/** Enrolls the computer (when a token is given) and merges the hook entries of every wrapped harness. */
export async function enrollWith(options: EnrollOptions): Promise<number> {
  const { values, positionals } = parse(options.program, options.args, {
    server: { type: "string" },
    token: { type: "string" },
    harness: { type: "string" },
    workspace: { type: "string" },
    "hooks-port": { type: "string" },
    "gateway-port": { type: "string" },
    json: { type: "boolean", default: false },
  });
  if (positionals.length > 0) throw new UsageError(`${options.program}: unexpected ${positionals.join(" ")}\n${USAGE}`);
  const named = harnessList(values.harness);
  if (options.harnessRequired && named.length === 0)
    throw new UsageError(`${options.program}: --harness is required (e.g. --harness claude-code)\n${USAGE}`);
  const existing = readHost();
  if (!values.token && !existing) throw new UsageError(`${options.program}: --token is required to enroll this computer\n${USAGE}`);
  if (values.token && !values.server) throw new UsageError(`${options.program}: --server is required with --token\n${USAGE}`);
  const ports = {
    hooks: port(values["hooks-port"], existing?.ports.hooks ?? DEFAULT_PORTS.hooks, "--hooks-port"),
    gateway: port(values["gateway-port"], existing?.ports.gateway ?? DEFAULT_PORTS.gateway, "--gateway-port"),
  };
  // Union: a re-apply never drops a harness (only `tacho reassign --harness` does).
  const harnesses = [...new Set([...(existing?.harnesses ?? []), ...named])];

  checkHarnessConfigs(harnesses);
  useNodeCrypto();
  let host: HostConfig;
  let policy: string;
  if (values.token) {
    host = await register(values.server!, values.token, harnesses, ports, values.workspace);
    // The hook secret guards this state directory's recorder: a new token keeps it (and the configs written with it).
    if (existing?.hook_secret) host.hook_secret = existing.hook_secret;
    writeHost(host);
    policy = await cachePolicy(host);
  } else {
    host = withHookSecret({ ...existing!, harnesses, ports });
    if (values.workspace && values.workspace !== host.workspace) {
      throw new UsageError(`${options.program}: to move this computer to workspace ${values.workspace}, use tacho reassign --workspace`);
    }
    writeHost(host);
    policy = "unchanged";
  }
  const results = applyHarnesses(host, harnesses, "apply");
  report(values.json ?? false, host, policy, results);
  return 0;
}

function port(value: string | undefined, fallback: number, flag: string): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 65535) throw new UsageError(`${flag} takes a port number (1-65535)`);
  return n;
}

async function register(
  server: string,
  token: string,
  harnesses: string[],
  ports: HostConfig["ports"],
  workspace: string | undefined,
): Promise<HostConfig> {
  let base: URL;
  try {
    base = new URL(server);
  } catch {
    throw new UsageError(`--server ${server} is not a URL`);
  }
  const secret = newSecretKey();
  const publicKey = publicKeyOf(secret);
  const body = { token, public_key: bytesToHex(publicKey), hostname: hostname() || "unknown", harnesses };
  let res: Response;
  try {
    res = await fetch(new URL(ROUTES.enroll, base), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
  } catch (err) {
    throw new ExitError(
      1,
      `cannot reach ${base.origin}: ${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message}`,
    );
  }
  const answer: unknown = await res.json().catch(() => null);
  if (!res.ok) {
    const error = ErrorAnswer.safeParse(answer);
    throw new ExitError(1, `enrollment refused (HTTP ${res.status}): ${error.success ? error.data.message : "no reason given"}`);
  }
  const parsed = EnrollAnswer.safeParse(answer);
  if (!parsed.success) throw new ExitError(1, `the server's enrollment answer is not one this collector understands`);
  if (workspace && parsed.data.workspace !== workspace) {
    throw new ExitError(1, `the token enrolls into workspace ${parsed.data.workspace}, not ${workspace}; nothing was written`);
  }
  return withHookSecret({
    v: 1,
    host_id: parsed.data.host_id,
    workspace: parsed.data.workspace,
    server: base.origin,
    server_key: parsed.data.server_key,
    secret_key: bytesToHex(secret),
    public_key: bytesToHex(publicKey),
    harnesses,
    ports,
    enrolled_ms: Date.now(),
  });
}

async function cachePolicy(host: HostConfig): Promise<string> {
  try {
    const cached = await fetchPolicy(host, null, Date.now());
    return cached === "unchanged" ? "unchanged" : cached.etag;
  } catch (err) {
    process.stderr.write(
      `warning: the policy was not cached (${(err as Error).message}); until it is, tacho hook denies tool calls while the recorder is down\n`,
    );
    return "missing";
  }
}

function report(json: boolean, host: HostConfig, policy: string, results: HarnessResult[]): void {
  if (json) {
    const out = {
      host_id: host.host_id,
      workspace: host.workspace,
      server: host.server,
      server_key_id: host.server_key.key_id,
      key_id: keyIdFor(fromHex(host.public_key, 32)),
      policy_etag: policy === "missing" || policy === "unchanged" ? null : policy,
      ports: host.ports,
      harnesses: results,
      state_dir: statePath(),
    };
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    return;
  }
  const lines = [`enrolled ${host.host_id} in workspace ${host.workspace} (${host.server})`];
  lines.push(`policy: ${policy === "missing" ? "not cached" : policy === "unchanged" ? "kept" : `cached (${policy})`}`);
  for (const r of results) {
    lines.push(`${r.harness}: hooks ${r.changed ? "written to" : "already in"} ${r.config}`);
    if (r.action) lines.push(`  ${r.action}`);
  }
  process.stdout.write(`${lines.join("\n")}\n`);
}
