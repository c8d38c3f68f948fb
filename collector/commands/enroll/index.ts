import { exposedLine, secretReadableByOthers } from "../../harnesses/exposed.ts";
import { fromHex, keyIdFor, newSecretKey, TOKEN_SHAPE } from "../../../protocol/index.ts";
import { applyHarnesses, checkHarnessConfigs, proveHookCommands, type HarnessResult } from "../../harnesses/apply.ts";
import { hookProgram } from "../../harnesses/command.ts";
import { harnessHealth } from "../../harnesses/health.ts";
import { checkRoutes, type GatewayResult, gatewayHarnesses, mcpLine, NOT_ROUTED, routeHarness } from "../../harnesses/gateway.ts";
import { harnessList } from "../../harnesses/index.ts";
import type { HookProblem } from "../../harnesses/types.ts";
import { parse } from "../../lib/args.ts";
import { ExitError, UsageError } from "../../lib/errors.ts";
import { useNodeCrypto } from "../../lib/node-crypto.ts";
import { readHost, statePath, withHookSecret, writeHost, type HostConfig } from "../../lib/state.ts";
import { startRecorder } from "../../lib/recorder-process.ts";
import { checkShellHeaders, chooseUpstreams, type UpstreamSaid, upstreamLine } from "../../harnesses/upstreams.ts";
import { cachePolicy, checkOrigin, register, serverUrl, signIn } from "./register.ts";
import { choosePorts, portTrouble, type Reenroll, reenrollCheck } from "./steps.ts";

export const USAGE = `usage: tacho enroll --server URL [--token TOKEN] [--harness LIST] [options]
       tacho enroll --harness LIST            (this computer is enrolled already: wrap more harnesses)

Enrolls this computer with Oxagen: creates its key, writes ~/.config/oxagen/tacho/host.json,
caches the workspace's signed policy, merges the hook entries into each harness's own
configuration, and starts the recorder. Without --harness the computer is enrolled for custom
agents only (tacho hook --agent NAME).

Without --token it signs in: it prints a short code and the console's address (and opens it in
a browser when this computer has one); an operator with an admin token approves the code in the
console, from any browser, seeing this computer's name, user, OS, the harnesses asked for and its
host key; then it enrolls as with a token. Nothing is written until the code is approved; a
denied or expired code (10 minutes) enrolls nothing.

  --server URL        the Oxagen server (npm start prints it, with a ready enroll line)
  --token TOKEN       a one-time enrollment token (oxe_...) instead of signing in: from the console's
                      Computers page, an agent's registration, or POST /v1/enrollment-tokens
  --print             when signing in, only print the code and the address (never open a browser)
  --harness LIST      comma-separated: claude-code, codex, cursor, stella
  --workspace ID      refuse unless the token enrolls into this workspace (signing in: the only
                      workspace the code can be approved into)
  --hooks-port N      the recorder's loopback hook port (default: the first free one from 47110,
                      kept in host.json, so two enrollments on one computer do not share one)
  --gateway           point each wrapped harness that can use it at the model gateway
                      (Claude Code: settings env.ANTHROPIC_BASE_URL; Codex: a model provider; never Cursor).
                      A base URL of your own already there (or in this shell's ANTHROPIC_BASE_URL /
                      OPENAI_BASE_URL) becomes this computer's upstream: the gateway forwards to it,
                      and unenroll puts it back
  --gateway-port N    the loopback gateway port (default: the one after the hook port)
  --upstream V=URL    where the gateway forwards vendor V's calls from this computer (V: anthropic,
                      openai); repeat for both. Kept across re-enrolls; tacho status shows it
  --force             re-enroll even though recorded steps are not delivered yet (they are dropped)
  --no-start          do not start the recorder
  --json              print the result as JSON

On a computer that is enrolled already, a new --token re-enrolls this same computer into the
workspace the token names: the old host is unenrolled on the server, the harness settings, the
hook secret and the upstreams are kept (the recorder must be stopped, and everything recorded
delivered). Every hook command it writes runs this tacho with the Node running it (absolute
paths), and is run once before anything is written.`;

export interface EnrollOptions {
  /** The command line the user typed, for messages (`tacho enroll`, `oxagen agent enroll`). */
  program: string;
  args: string[];
}

export async function enroll(args: string[]): Promise<number> {
  return enrollWith({ program: "tacho enroll", args });
}

/** An operator token (oxo_...) given where a one-time enrollment token (oxe_...) is needed. */
function operatorTokenProblem(program: string, token: string, server: string): string | null {
  if (!/^oxo_/.test(token)) return null;
  return [
    `${program}: that is an operator token (oxo_...); enrolling needs a one-time enrollment token (oxe_...).`,
    `Enroll by signing in instead (an operator approves a code in the console): ${program} --server ${server}`,
    "Or create an enrollment token with the operator token (npm start prints a ready enroll line with one):",
    `  curl -X POST -H "Authorization: Bearer ${token.slice(0, 8)}..." -H "content-type: application/json" -d '{}' ${server.replace(/\/+$/, "")}/v1/enrollment-tokens`,
    "Nothing was written.",
  ].join("\n");
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
    gateway: { type: "boolean", default: false },
    upstream: { type: "string", multiple: true },
    force: { type: "boolean", default: false },
    "no-start": { type: "boolean", default: false },
    print: { type: "boolean", default: false },
    json: { type: "boolean", default: false },
  });
  if (positionals.length > 0) throw new UsageError(`${options.program}: unexpected ${positionals.join(" ")}\n${USAGE}`);
  const named = harnessList(values.harness);
  const existing = readHost();
  checkServerAndToken(options.program, values.server, values.token, existing !== null);
  // A server named: this computer enrolls (again), with the token or by signing in.
  const enrolling = values.server !== undefined;
  const reenroll = enrolling && existing ? reenrollCheck(options.program, existing, values.force ?? false) : null;
  const ports = await choosePorts(values["hooks-port"], values["gateway-port"], existing?.ports);
  // Union: a re-apply never drops a harness (only `tacho reassign --harness` does).
  const harnesses = [...new Set([...(existing?.harnesses ?? []), ...named])];
  const hook_command = hookProgram();

  const routed = gatewayHarnesses(harnesses, existing?.gateway ?? [], values.gateway ?? false);
  // Everything that can fail locally fails before the token is spent or a file is written.
  checkHarnessConfigs(harnesses, { ports, hook_command });
  proveHookCommands({ ports, hook_command }, harnesses);
  checkRoutes({ ports }, routed, []);
  checkShellHeaders(options.program, routed);
  const upstreams = chooseUpstreams(
    options.program,
    values.upstream ?? [],
    routed,
    { ports, hook_secret: existing?.hook_secret },
    existing?.upstreams,
  );
  useNodeCrypto();
  let host: HostConfig;
  let policy: string;
  if (enrolling) {
    const base = serverUrl(values.server!);
    await checkOrigin(options.program, base, values.token !== undefined);
    const secret = newSecretKey();
    const token =
      values.token ?? (await signIn(base, secret, harnesses, values.workspace, { program: options.program, print: values.print ?? false }));
    host = { ...(await register(base, token, secret, harnesses, ports, values.workspace)), hook_command, gateway: routed };
    // The hook secret guards this state directory's recorder: a new token keeps it (and the configs written with it).
    if (existing?.hook_secret) host.hook_secret = existing.hook_secret;
    if (upstreams.chosen) host.upstreams = upstreams.chosen;
    if (reenroll) await reenroll.finish(host);
    writeHost(host);
    policy = await cachePolicy(host);
  } else {
    const next = { ...existing!, harnesses, ports, hook_command, gateway: routed };
    host = reapplied(options.program, next, upstreams.chosen, values.workspace);
    policy = "unchanged";
  }
  const results = applyHarnesses(host, harnesses, "apply");
  const routes = routed.map((h) => routeHarness(host, h, true)!);
  const unrouted = values.gateway ? harnesses.filter((h) => NOT_ROUTED[h]).map((h) => ({ harness: h, why: NOT_ROUTED[h]! })) : [];
  const problems = Object.fromEntries(harnesses.map((h) => [h, harnessHealth(host, h).problems ?? []]));
  const recorder = values["no-start"] ? null : await startedRecorder();
  const listening = recorder && !("error" in recorder) ? await portTrouble(host) : [];
  report(
    values.json ?? false,
    host,
    policy,
    results,
    problems,
    recorder,
    { routes, unrouted },
    { upstreams: upstreams.said, reenroll: reenroll?.said ?? null, listening },
  );
  return (recorder && "error" in recorder) || listening.length > 0 ? 1 : 0;
}

function report(
  json: boolean,
  host: HostConfig,
  policy: string,
  results: HarnessResult[],
  problems: Record<string, HookProblem[]>,
  recorder: { pid: number; started: boolean } | { error: string } | null,
  gateway: { routes: GatewayResult[]; unrouted: { harness: string; why: string }[] },
  more: { upstreams: UpstreamSaid[]; reenroll: Reenroll["said"] | null; listening: string[] },
): void {
  const exposed = secretReadableByOthers(host.hook_secret, results, gateway.routes);
  if (json) {
    const out = {
      host_id: host.host_id,
      workspace: host.workspace,
      server: host.server,
      server_key_id: host.server_key.key_id,
      key_id: keyIdFor(fromHex(host.public_key, 32)),
      policy_etag: policy === "missing" || policy === "unchanged" ? null : policy,
      ports: host.ports,
      hook_command: host.hook_command,
      harnesses: results.map((r) => ({ ...r, ...(problems[r.harness]?.length ? { problems: problems[r.harness] } : {}) })),
      recorder,
      gateway: { port: host.ports.gateway, routed: gateway.routes, not_routed: gateway.unrouted, upstreams: more.upstreams },
      reenrolled: more.reenroll,
      cannot_listen: more.listening,
      secret_readable_by_others: exposed,
      state_dir: statePath(),
    };
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    return;
  }
  const lines: string[] = [];
  if (more.reenroll)
    lines.push(
      `this computer was enrolled already (host ${more.reenroll.old_host} in workspace ${more.reenroll.old_workspace}): re-enrolled it with the new token; the old host on the server: ${more.reenroll.server}`,
    );
  lines.push(`enrolled ${host.host_id} in workspace ${host.workspace} (${host.server})`);
  lines.push(`policy: ${policy === "missing" ? "not cached" : policy === "unchanged" ? "kept" : `cached (${policy})`}`);
  if (results.length === 0) lines.push(`harnesses: none; custom agents call ${host.hook_command} hook --agent NAME`);
  for (const r of results) {
    lines.push(`${r.harness}: hooks ${r.changed ? "written to" : "already in"} ${r.config}`);
    for (const p of problems[r.harness] ?? []) lines.push(`  but ${p.state}: ${p.detail}`, `  fix: ${p.fix}`);
  }
  for (const r of gateway.routes) {
    lines.push(
      `${r.harness}: model calls through the gateway (127.0.0.1:${host.ports.gateway}), ${r.changed ? "set in" : "already in"} ${r.config}`,
    );
    const mcp = mcpLine(r, true);
    if (mcp) lines.push(mcp);
  }
  for (const u of gateway.unrouted) lines.push(`${u.harness}: model calls not through the gateway: ${u.why}`);
  for (const u of more.upstreams) lines.push(upstreamLine(u));
  if (recorder === null) lines.push("recorder: not started (--no-start); start it with tacho daemon start");
  else if ("error" in recorder) lines.push(`recorder: ${recorder.error}`);
  else lines.push(`recorder: ${recorder.started ? "started" : "running"} (pid ${recorder.pid}, 127.0.0.1:${host.ports.hooks})`);
  for (const l of more.listening) lines.push(`but ${l}`);
  for (const e of exposed) lines.push(exposedLine(e));
  process.stdout.write(`${lines.join("\n")}\n`);
}

/** The server and token flags make sense together, and a token is an enrollment token (before anything is written). */
function checkServerAndToken(program: string, server: string | undefined, token: string | undefined, enrolled: boolean): void {
  if (!server && !enrolled)
    throw new UsageError(`${program}: --server is required to enroll this computer (with --token, or to sign in)\n${USAGE}`);
  if (token && !server) throw new UsageError(`${program}: --server is required with --token\n${USAGE}`);
  const operator = token ? operatorTokenProblem(program, token, server!) : null;
  if (operator) throw new UsageError(operator);
  if (token && TOKEN_SHAPE.exec(token)?.[1] !== "oxe")
    throw new UsageError(
      `${program}: --token ${token.length > 12 ? `${token.slice(0, 12)}...` : token} is not an enrollment token: one is oxe_, 16 hex characters, _ and 48 more, as npm start or POST /v1/enrollment-tokens gives it (was it copied whole?). Nothing was written.`,
    );
}

/** Starts the recorder; one that cannot start is reported, not thrown (enroll has written its configs by then). */
async function startedRecorder(): Promise<{ pid: number; started: boolean } | { error: string }> {
  try {
    return await startRecorder();
  } catch (err) {
    if (!(err instanceof ExitError)) throw err;
    return { error: err.message };
  }
}

/** The enrolled computer's state with this enroll's harnesses, ports and routes, written (no server is asked). */
function reapplied(
  program: string,
  next: HostConfig,
  upstreams: HostConfig["upstreams"] | undefined,
  workspace: string | undefined,
): HostConfig {
  const host = withHookSecret(next);
  if (upstreams) host.upstreams = upstreams;
  if (workspace && workspace !== host.workspace)
    throw new UsageError(`${program}: to move this computer to workspace ${workspace}, use tacho reassign --workspace`);
  writeHost(host);
  return host;
}
