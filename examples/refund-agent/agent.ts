// A small custom agent that issues refunds, with every step sent through `tacho hook --agent`.
// It fails closed: when tacho does not answer (not installed, crashed, unreadable answer), the
// refund is not issued.
import { spawnSync } from "node:child_process";

export interface RefundRequest {
  order: string;
  amount_cents: number;
  /** The customer's message: the prompt the agent acts on. */
  message: string;
}

export type Outcome = { status: "refunded"; refund_id: string } | { status: "refused"; reason: string };

export interface AgentOptions {
  /** The payments API's base URL. */
  payments: string;
  /** This run's own id; Oxagen files the run under it. */
  session: string;
  /** The agent's name in the record (`tacho hook --agent NAME`). */
  name?: string;
  /** How to run tacho: `["tacho"]` when it is on PATH. */
  tacho?: string[];
  /** tacho's environment (where it finds the enrollment: `OXAGEN_HOME`); this process's by default. */
  env?: NodeJS.ProcessEnv;
}

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

  constructor(options: AgentOptions) {
    this.#o = { name: "refunds", tacho: ["tacho"], env: process.env, ...options };
  }

  #step(event: string, fields: Record<string, unknown> = {}): string | null {
    const answer = tachoHook(this.#o.tacho, this.#o.name, { session_id: this.#o.session, hook_event_name: event, ...fields }, this.#o.env);
    return refusal(event, answer);
  }

  /** Starts the run; throws when Oxagen stops it before it begins. */
  start(): void {
    const stopped = this.#step("SessionStart", { cwd: process.cwd() });
    if (stopped) throw new Error(`the run was stopped before it began: ${stopped}`);
  }

  /** Handles one refund request: the prompt, then the refund tool call, gated before it reaches the payments API. */
  async handle(req: RefundRequest): Promise<Outcome> {
    try {
      const blocked = this.#step("UserPromptSubmit", { prompt: req.message });
      if (blocked) return { status: "refused", reason: blocked };
      const id = `call-${++this.#calls}`;
      const input = { order: req.order, amount_cents: req.amount_cents };
      const denied = this.#step("PreToolUse", { tool_name: "issue_refund", tool_input: input, tool_use_id: id });
      if (denied) return { status: "refused", reason: denied };
      const res = await fetch(`${this.#o.payments}/v1/refunds`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(input),
      });
      const body = (await res.json()) as { id?: string; error?: string };
      this.#step("PostToolUse", {
        tool_name: "issue_refund",
        tool_input: input,
        tool_use_id: id,
        tool_response: { status: res.status, ...body },
      });
      if (!res.ok || !body.id) return { status: "refused", reason: `the payments API refused: ${body.error ?? res.status}` };
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
  end(): void {
    this.#step("SessionEnd", { reason: "done" });
  }
}
