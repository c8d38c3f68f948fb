// A small custom agent that issues refunds, with every step sent through `tacho hook --agent`.
// It holds no credential: the payments API is the workspace's Oxagen tool `issue_refund`, called
// through the recorder's gateway (MCP at http://127.0.0.1:<gateway port>/mcp), and the server puts
// the API key on the request. It fails closed: when tacho does not answer (not installed, crashed,
// unreadable answer), the refund is not issued.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

export interface RefundRequest {
  order: string;
  amount_cents: number;
  /** The customer's message: the prompt the agent acts on. */
  message: string;
}

export type Outcome = { status: "refunded"; refund_id: string } | { status: "refused"; reason: string };

/** Where this computer's gateway serves the workspace's tools, and the enrollment's secret it takes. */
export interface GatewayAddress {
  url: string;
  secret: string;
}

export interface AgentOptions {
  /** The gateway (see {@link gatewayOf}). */
  gateway: GatewayAddress;
  /** This run's own id; Oxagen files the run under it. */
  session: string;
  /** The agent's name in the record (`tacho hook --agent NAME`). */
  name?: string;
  /** How to run tacho: `["tacho"]` when it is on PATH. */
  tacho?: string[];
  /** tacho's environment (where it finds the enrollment: `OXAGEN_HOME`); this process's by default. */
  env?: NodeJS.ProcessEnv;
}

/** The gateway of the enrollment tacho uses (its host.json: the gateway port and the secret the harness settings carry). */
export function gatewayOf(env: NodeJS.ProcessEnv = process.env): GatewayAddress {
  const dir = env.OXAGEN_HOME || join(env.HOME || homedir(), ".config", "oxagen", "tacho");
  const host = JSON.parse(readFileSync(join(dir, "host.json"), "utf8")) as { ports: { gateway: number }; hook_secret?: string };
  if (!host.hook_secret) throw new Error("this enrollment has no gateway secret yet: run tacho enroll --gateway");
  return { url: `http://127.0.0.1:${host.ports.gateway}/mcp`, secret: host.hook_secret };
}

/** The tool's name as the workspace defines it, and as the agent's hooks name it (`mcp__oxagen__<tool>`, as Claude Code does). */
export const REFUND_TOOL = "issue_refund";
const HOOK_TOOL = `mcp__oxagen__${REFUND_TOOL}`;

/** tacho gave no usable answer: the step must not go ahead. */
export class TachoUnavailable extends Error {}

type Answer = Record<string, unknown>;

/** One step through `tacho hook --agent NAME`: exits 0 with one JSON document, or the step fails closed. */
export function tachoHook(tacho: string[], agent: string, payload: Record<string, unknown>, env = process.env): Answer {
  const [bin, ...args] = tacho;
  const r = spawnSync(bin!, [...args, "hook", "--agent", agent], {
    input: JSON.stringify(payload),
    encoding: "utf8",
    timeout: 30_000,
    env,
  });
  if (r.error) throw new TachoUnavailable(`tacho could not run: ${r.error.message}`);
  if (r.status !== 0) throw new TachoUnavailable(`tacho exited ${r.status}: ${r.stderr.trim()}`);
  let answer: unknown;
  try {
    answer = JSON.parse(r.stdout);
  } catch {
    throw new TachoUnavailable("tacho's answer is not JSON");
  }
  if (answer === null || typeof answer !== "object" || Array.isArray(answer)) throw new TachoUnavailable("tacho's answer is not an object");
  return answer as Answer;
}

/** Why an answer refuses the step, or null when it lets it go on. */
function refusal(event: string, a: Answer): string | null {
  if (event === "SessionStart" && a.continue === false) return String(a.stopReason ?? "the session was stopped");
  if (event === "UserPromptSubmit" && a.decision === "block") return String(a.reason ?? "the prompt was blocked");
  const out = a.hookSpecificOutput as { permissionDecision?: unknown; permissionDecisionReason?: unknown } | undefined;
  // No person watches this agent: a policy that asks one is a refusal here.
  if (out?.permissionDecision === "deny" || out?.permissionDecision === "ask") return String(out.permissionDecisionReason ?? "refused");
  return null;
}

export class RefundAgent {
  readonly #o: Required<AgentOptions>;
  #calls = 0;
  #client: Client | null = null;

  constructor(options: AgentOptions) {
    this.#o = { name: "refunds", tacho: ["tacho"], env: process.env, ...options };
  }

  #step(event: string, fields: Record<string, unknown> = {}): string | null {
    const answer = tachoHook(this.#o.tacho, this.#o.name, { session_id: this.#o.session, hook_event_name: event, ...fields }, this.#o.env);
    return refusal(event, answer);
  }

  /** The MCP client of the workspace's tools, through the gateway, naming this run (connected once). */
  async #tools(): Promise<Client> {
    if (this.#client) return this.#client;
    const headers = {
      "x-oxagen-hook-secret": this.#o.gateway.secret,
      "x-oxagen-agent": this.#o.name,
      "x-oxagen-session-id": this.#o.session,
    };
    const client = new Client({ name: "refund-agent", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(this.#o.gateway.url), { requestInit: { headers } }));
    this.#client = client;
    return client;
  }

  /** Starts the run; throws when Oxagen stops it before it begins. */
  start(): void {
    const stopped = this.#step("SessionStart", { cwd: process.cwd() });
    if (stopped) throw new Error(`the run was stopped before it began: ${stopped}`);
  }

  /** Handles one refund request: the prompt, then the refund tool call, gated by the hook and by the workspace's server. */
  async handle(req: RefundRequest): Promise<Outcome> {
    try {
      const blocked = this.#step("UserPromptSubmit", { prompt: req.message });
      if (blocked) return { status: "refused", reason: blocked };
      const id = `call-${++this.#calls}`;
      const input = { order: req.order, amount_cents: req.amount_cents };
      const denied = this.#step("PreToolUse", { tool_name: HOOK_TOOL, tool_input: input, tool_use_id: id });
      if (denied) return { status: "refused", reason: denied };
      const result = (await (await this.#tools()).callTool({ name: REFUND_TOOL, arguments: input })) as {
        isError?: boolean;
        content?: { type: string; text?: string }[];
      };
      const text = result.content?.find((c) => c.type === "text")?.text ?? "";
      this.#step("PostToolUse", { tool_name: HOOK_TOOL, tool_input: input, tool_use_id: id, tool_response: result });
      // A refusal by the workspace (its clauses, a pause, a budget) or the API's own error: the model-readable reason.
      if (result.isError) return { status: "refused", reason: text };
      const body = JSON.parse(text) as { id?: string; error?: string };
      if (!body.id) return { status: "refused", reason: `the payments API refused: ${body.error ?? text}` };
      return { status: "refunded", refund_id: body.id };
    } catch (err) {
      if (err instanceof TachoUnavailable) return { status: "refused", reason: `fails closed: ${err.message}` };
      throw err;
    } finally {
      try {
        this.#step("Stop");
      } catch {
        // The turn's end is telemetry only: nothing to refuse.
      }
    }
  }

  /** Ends the run. */
  async end(): Promise<void> {
    await this.#client?.close();
    this.#step("SessionEnd", { reason: "done" });
  }
}
