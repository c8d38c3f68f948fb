/**
 * Frame kinds and their payloads. A frame carries hashes, sizes and names, never content:
 * content travels as a separate body named by its SHA-256 (see {@link BodyRef}).
 * @module
 */
import { z } from "zod";
import { FRAME_KIND_NAMES } from "./frame-check.ts";
import { Sha256Hex } from "./ids.ts";
import { ToolCallId } from "./tools.ts";

/** Which recording path wrote a frame. */
export const RecordingPath = z.enum(["hook", "gateway", "transcript", "worktree", "recorder", "backfill"]);
/** One of {@link RecordingPath}. */
export type RecordingPath = z.infer<typeof RecordingPath>;

/** What a body is. */
export const BodyRole = z.enum(["prompt", "tool_input", "tool_output", "message", "llm_request", "llm_response", "error"]);

/** Why a body is not kept: over the 1 MiB limit, the workspace keeps digests only, or its retention excludes this role. */
export const BodyNotKept = z.enum(["over_limit", "digest_only", "retention"]);

/** The largest body Oxagen keeps, in bytes (1 MiB). */
export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * A reference to a body: its role, the SHA-256 and size of its bytes after redaction, and
 * whether it is kept (then the collector ships it to the server) or why not.
 */
export const BodyRef = z.union([
  z.strictObject({ role: BodyRole, sha256: Sha256Hex, size: z.number().int().nonnegative(), kept: z.literal(true) }),
  z.strictObject({
    role: BodyRole,
    sha256: Sha256Hex,
    size: z.number().int().nonnegative(),
    kept: z.literal(false),
    why: BodyNotKept,
  }),
]);
/** One of {@link BodyRef}. */
export type BodyRef = z.infer<typeof BodyRef>;

/** A credential removed from a body before it was hashed: its kind and the SHA-256 of what was removed. */
export const Redaction = z.strictObject({ role: BodyRole, kind: z.string().regex(/^[a-z0-9_]{1,48}$/), sha256: Sha256Hex });
/** One of {@link Redaction}. */
export type Redaction = z.infer<typeof Redaction>;

/** The decision a `policy_decision` frame records (see its `decision` field). */
export const PolicyDecisionValue = z.enum(["allow", "deny", "ask", "none"]);

const name = z.string().min(1).max(256);
const count = z.number().int().nonnegative();
const hashAndSize = { sha256: Sha256Hex, size: count };

/** Fields every payload may carry. */
const common = {
  path: RecordingPath,
  backfilled: z.literal(true).optional(),
  bodies: z.array(BodyRef).max(16).optional(),
  redactions: z.array(Redaction).max(256).optional(),
};

const toolRef = { tool_name: name, tool_use_id: name.optional() };

/** The payload schema of each frame kind. */
export const PAYLOADS = {
  agent_start: z.strictObject({
    ...common,
    harness: name,
    agent: name.optional(),
    session_id: name,
    cwd: z.string().max(4096).optional(),
    source: name.optional(),
    model: name.optional(),
    pid: count.optional(),
  }),
  turn_start: z.strictObject({ ...common, prompt: z.strictObject(hashAndSize), turn_id: name.optional() }),
  policy_decision: z.strictObject({
    ...common,
    subject: z.enum(["tool", "model", "prompt", "session", "oxagen_tool"]),
    /**
     * In `enforce` mode, what the agent was answered: `allow` (an explicit allow clause or
     * default), `deny`, `ask`, or `none`: no clause decided, no permission decision was given and
     * the harness's own permission flow ran as if Oxagen were not there. In `observe` mode, what
     * the policy would have decided; the agent was answered nothing.
     */
    decision: PolicyDecisionValue,
    /** `observe`: recorded only, never answered. */
    mode: z.enum(["enforce", "observe"]),
    reason: z.string().max(1024).optional(),
    reason_sha256: Sha256Hex.optional(),
    rule: name.optional(),
    policy_etag: name.optional(),
    tool_name: name.optional(),
    tool_use_id: name.optional(),
    model: name.optional(),
    offline: z.literal(true).optional(),
    /** Gateway only, subject `oxagen_tool`: the server's meter row of the refused call. */
    call_id: ToolCallId.optional(),
  }),
  tool_requested: z.strictObject({ ...common, ...toolRef, input: z.strictObject(hashAndSize) }),
  token_denied: z.strictObject({ ...common, ...toolRef, input: z.strictObject(hashAndSize), reason: z.string().max(1024) }),
  approval_request: z.strictObject({ ...common, ...toolRef }),
  harness_permission: z.strictObject({ ...common, ...toolRef, decision: z.enum(["deny", "ask", "allow"]) }),
  tool_call: z.strictObject({
    ...common,
    ...toolRef,
    status: z.enum(["ok", "error", "interrupted"]),
    exit_code: z.number().int().optional(),
    duration_ms: count.optional(),
    input: z.strictObject(hashAndSize).optional(),
    output: z.strictObject(hashAndSize).optional(),
    server: name.optional(),
    /** Gateway only: the server's meter row of a call on the workspace's Oxagen tools (`server: "oxagen"`). */
    call_id: ToolCallId.optional(),
  }),
  command: z.strictObject({ ...common, tool_use_id: name.optional(), program: name, command: z.strictObject(hashAndSize) }),
  file_io: z.strictObject({
    ...common,
    tool_use_id: name.optional(),
    op: z.enum(["read", "write", "edit", "delete", "list", "search"]),
    file: z.string().min(1).max(4096),
  }),
  network: z.strictObject({
    ...common,
    tool_use_id: name.optional(),
    method: z.string().max(16).optional(),
    host: z.string().min(1).max(255),
    url: z.strictObject(hashAndSize),
  }),
  turn_end: z.strictObject({
    ...common,
    message: z.strictObject(hashAndSize).optional(),
    turn_id: name.optional(),
    /** Token counts a harness reports on its own hooks (Cursor): recorded, never metered as spend. */
    usage: z
      .strictObject({
        input_tokens: count,
        output_tokens: count,
        cache_read_tokens: count.optional(),
        cache_write_tokens: count.optional(),
      })
      .optional(),
  }),
  subagent_start: z.strictObject({ ...common, agent_id: name.optional(), agent_type: name.optional() }),
  subagent_stop: z.strictObject({ ...common, agent_id: name.optional(), agent_type: name.optional(), status: name.optional() }),
  agent_stop: z.strictObject({
    ...common,
    reason: z.string().max(256),
    outcome: z.enum(["completed", "aborted", "error", "crashed"]),
  }),
  llm_call: z.strictObject({
    ...common,
    vendor: name,
    model: name,
    forwarded: z.literal(true),
    status: z.number().int().min(0).max(999).optional(),
    latency_ms: count.optional(),
    /** Gateway only: milliseconds from the request's arrival to the vendor's first response byte. */
    ttfb_ms: count.optional(),
    /** Gateway only: the client went away before the response ended; `usage` is what the vendor reported until then. */
    client_closed: z.literal(true).optional(),
    /** Gateway only: the vendor went silent past the gateway's timeout before its first byte or between two, and the gateway ended the call. */
    timed_out: z.enum(["first_byte", "idle"]).optional(),
    stream: z.boolean().optional(),
    usage: z.strictObject({
      input_tokens: count,
      output_tokens: count,
      cache_read_tokens: count.optional(),
      cache_write_tokens: count.optional(),
      reasoning_tokens: count.optional(),
      thinking_tokens: count.optional(),
    }),
    cost_microusd: count.optional(),
    request: z.strictObject(hashAndSize).optional(),
    response: z.strictObject(hashAndSize).optional(),
    message_id: name.optional(),
    request_id: name.optional(),
  }),
  error: z.strictObject({
    ...common,
    code: name,
    forwarded: z.literal(false),
    status: z.number().int().min(0).max(999).optional(),
    vendor: name.optional(),
    model: name.optional(),
  }),
  telemetry_gap: z.strictObject({
    ...common,
    cause: z.enum([
      "daemon_down",
      "spool_overflow",
      "unobserved_tail",
      "rebuilt",
      "hooks_missing",
      "log_unreadable",
      "clock_skew",
      "other",
    ]),
    from_ms: count.optional(),
    to_ms: count.optional(),
    dropped: count.optional(),
    detail: z.string().max(1024).optional(),
  }),
  "oxagen:worktree_reconciled": z.strictObject({
    ...common,
    root: z.string().max(4096),
    head: z
      .string()
      .regex(/^[0-9a-f]{40,64}$/)
      .optional(),
    changed: z
      .array(
        z.strictObject({
          file: z.string().min(1).max(4096),
          status: z.enum(["added", "modified", "deleted", "renamed", "untracked", "other"]),
          added: count.optional(),
          removed: count.optional(),
        }),
      )
      .max(10_000),
    commits: z.array(z.strictObject({ sha: z.string().regex(/^[0-9a-f]{40,64}$/), subject: z.strictObject(hashAndSize) })).max(1000),
    truncated: z.literal(true).optional(),
    final: z.literal(true).optional(),
  }),
} as const;

/** Every frame kind, in the order the coverage statement names them. */
export const FRAME_KINDS: FrameKind[] = [...FRAME_KIND_NAMES];
// The schema-free list that frame-check.ts checks kinds against names exactly these kinds.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameKinds: Same<keyof typeof PAYLOADS, (typeof FRAME_KIND_NAMES)[number]> = true;
void sameKinds;
/** A frame kind. */
export type FrameKind = keyof typeof PAYLOADS;
/** The payload type of a frame kind. */
export type Payload<K extends FrameKind> = z.infer<(typeof PAYLOADS)[K]>;
/** Any frame kind's payload. */
export type AnyPayload = { [K in FrameKind]: Payload<K> }[FrameKind];

/** True when `kind` names a frame kind. */
export function isFrameKind(kind: string): kind is FrameKind {
  return Object.hasOwn(PAYLOADS, kind);
}

/** The telemetry_gap causes a computer may report. */
export type TelemetryGapCause = Payload<"telemetry_gap">["cause"];
