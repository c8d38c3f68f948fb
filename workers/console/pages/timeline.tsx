/** @jsxImportSource hono/jsx */
import { errorReason } from "../../chain/outcome.ts";
import { callPrice } from "../../spend/price.ts";
import { Head, plural, usd, When } from "../layout.tsx";

/** A stored frame as the chain pages it. */
export interface FrameRowView {
  seq: number;
  t: number;
  kind: string;
  payload: string;
  hash: string;
  received_ms: number;
}

type Ref = { role?: unknown; sha256?: unknown; size?: unknown; kept?: unknown; why?: unknown };
type Fields = Record<string, unknown> & { bodies?: Ref[] };

const NOT_KEPT: Record<string, string> = {
  over_limit: "not kept: over the 1 MiB limit",
  digest_only: "not kept: the workspace keeps digests only",
  retention: "not kept: the workspace's retention does not keep this role",
};

/** A frame's payload fields (an unreadable one shows as none). */
export function fields(payload: string): Fields {
  try {
    const v = JSON.parse(payload) as unknown;
    return v && typeof v === "object" && !Array.isArray(v) ? (v as Fields) : {};
  } catch {
    return {};
  }
}

const str = (v: unknown) => (typeof v === "string" ? v : typeof v === "number" ? String(v) : "");
const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : 0);
const count = (n: number) => n.toLocaleString("en-US");

function ms(n: number): string {
  return n < 1000 ? `${n} ms` : `${(n / 1000).toFixed(n < 10_000 ? 2 : 1)} s`;
}

/** A model call that failed: the vendor answered an error status. */
export const failedCall = (kind: string, f: Fields) => kind === "llm_call" && typeof f.status === "number" && f.status >= 400;

/** What a frame's row says in its detail column: tool, decision, model, reason, outcome. */
function detail(kind: string, f: Fields, vendorSaid: string | undefined): string {
  const parts: string[] = [];
  if (f.tool_name) parts.push(`tool ${str(f.tool_name)}`);
  if (f.subject) parts.push(`${str(f.subject)}`);
  if (f.decision) parts.push(`decision ${str(f.decision)}${f.mode === "observe" ? " (observe)" : ""}`);
  if (f.rule) parts.push(`rule ${str(f.rule)}`);
  if (f.reason && typeof f.reason === "string") parts.push(f.reason);
  if (f.model) parts.push(`model ${str(f.model)}`);
  if (kind === "error") parts.push(errorReason(str(f.code) || "unknown", typeof f.status === "number" ? f.status : undefined));
  else if (failedCall(kind, f)) parts.push(`the vendor answered ${str(f.status)}${vendorSaid ? `: ${vendorSaid}` : ""}`);
  else if (f.status !== undefined) parts.push(`status ${str(f.status)}`);
  if (f.exit_code !== undefined) parts.push(`exit ${str(f.exit_code)}`);
  if (f.program) parts.push(`program ${str(f.program)}`);
  if (f.op) parts.push(`${str(f.op)} ${str(f.file)}`);
  if (f.host && kind === "network") parts.push(`${str(f.method)} ${str(f.host)}`.trim());
  if (f.cause) parts.push(`cause ${str(f.cause)}${f.detail ? `: ${str(f.detail)}` : ""}`);
  if (f.outcome) parts.push(`outcome ${str(f.outcome)}`);
  if (kind === "agent_start") parts.push(`${str(f.harness)}${f.cwd ? ` in ${str(f.cwd)}` : ""}`);
  if (Array.isArray(f.changed)) parts.push(`${plural(f.changed.length, "changed path")}`);
  return parts.join(" · ");
}

/** A model call's tokens, and its cost as the server priced it (the same rule, at the frame's receipt). */
function usage(kind: string, f: Fields, receivedMs: number): string {
  if (kind !== "llm_call" || !f.usage || typeof f.usage !== "object") return "";
  const u = f.usage as Record<string, unknown>;
  const parts = [`${count(num(u.input_tokens))} in`, `${count(num(u.output_tokens))} out`];
  if (num(u.cache_read_tokens) > 0) parts.push(`${count(num(u.cache_read_tokens))} cache read`);
  if (num(u.cache_write_tokens) > 0) parts.push(`${count(num(u.cache_write_tokens))} cache write`);
  const price = callPrice(f, receivedMs);
  parts.push(price === null ? "unpriced" : usd(price));
  return parts.join(" · ");
}

/** The duration a frame shows: a tool call's own, else the time since its request in this page. */
function durations(frames: FrameRowView[]): Map<number, string> {
  const requested = new Map<string, number>();
  const out = new Map<number, string>();
  for (const fr of frames) {
    const f = fields(fr.payload);
    const id = str(f.tool_use_id);
    if (fr.kind === "tool_requested" && id) requested.set(id, fr.t);
    if (fr.kind === "tool_call") {
      if (typeof f.duration_ms === "number") out.set(fr.seq, ms(f.duration_ms));
      else if (id && requested.has(id)) out.set(fr.seq, `${ms(fr.t - requested.get(id)!)} since request`);
    }
    if (fr.kind === "llm_call" && typeof f.latency_ms === "number") out.set(fr.seq, ms(f.latency_ms));
  }
  return out;
}

function Bodies(props: { run: string | null; seq: number; refs: Ref[] | undefined }) {
  if (!props.refs || props.refs.length === 0) return null;
  return (
    <ul class="plain">
      {props.refs.map((b, i) => (
        <li>
          {str(b.role)} ({str(b.size)} bytes){" "}
          {b.kept === true ? (
            props.run === null ? (
              <span class="muted">kept</span>
            ) : (
              <a href={`/console/runs/${props.run}/frames/${props.seq}/bodies/${i}`}>show</a>
            )
          ) : (
            <span class="muted">{NOT_KEPT[str(b.why)] ?? "not kept"}</span>
          )}
        </li>
      ))}
    </ul>
  );
}

/**
 * The run's timeline: one row per frame with what it says, its duration, a model call's tokens and
 * cost, and its bodies (linked for a run; `run` null for a computer's own chain, whose bodies have no page). `vendorSaid` holds, by seq, what the vendor's error answer said for failed calls.
 */
export function Timeline(props: { run: string | null; frames: FrameRowView[]; vendorSaid: Map<number, string> }) {
  const took = durations(props.frames);
  return (
    <table>
      <Head cols={["Seq", "Time (computer)", "Kind", "Path", "What", "Took", "Tokens and cost", "Bodies"]} />
      <tbody>
        {props.frames.map((fr) => {
          const f = fields(fr.payload);
          const bad = fr.kind === "error" || failedCall(fr.kind, f) || (fr.kind === "policy_decision" && f.decision === "deny");
          return (
            <tr id={`seq-${fr.seq}`} class={bad ? "bad" : undefined}>
              <th scope="row">{fr.seq}</th>
              <td>
                <When ms={fr.t} />
              </td>
              <td class="mono">{fr.kind}</td>
              <td>
                {str(f.path)}
                {f.backfilled ? " (backfilled)" : ""}
              </td>
              <td>{detail(fr.kind, f, props.vendorSaid.get(fr.seq))}</td>
              <td>{took.get(fr.seq) ?? ""}</td>
              <td>{usage(fr.kind, f, fr.received_ms)}</td>
              <td>
                <Bodies run={props.run} seq={fr.seq} refs={f.bodies} />
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
