import { z } from "zod";
import { HostId, ToolName } from "../../protocol/index.ts";

/** The largest answer a tool may give (its binding's `max_response_bytes` at most). */
export const MAX_TOOL_RESPONSE_BYTES = 1024 * 1024;
/** The longest a tool call may take (its binding's `timeout_ms` at most). */
export const MAX_TOOL_TIMEOUT_MS = 120_000;
/** The most tools a workspace may define. */
export const MAX_TOOLS = 200;

const glob = z.string().min(1).max(256);
const jsonObject = z.record(z.string(), z.unknown());

/** Where the server puts the credential in an outbound request: a header, its value made from `format`. */
export const CredentialPlacement = z.strictObject({
  header: z
    .string()
    .regex(/^[A-Za-z0-9-]{1,64}$/)
    .default("authorization"),
  format: z
    .string()
    .max(256)
    .refine((f) => f.includes("{credential}"), "the format must hold {credential}")
    .default("Bearer {credential}"),
});

const common = {
  credential: CredentialPlacement.optional(),
  max_response_bytes: z
    .number()
    .int()
    .min(1)
    .max(MAX_TOOL_RESPONSE_BYTES)
    .default(256 * 1024),
  timeout_ms: z.number().int().min(100).max(MAX_TOOL_TIMEOUT_MS).default(30_000),
};

/** An origin without path, query, fragment or credentials (`scheme://host[:port]`). */
const Origin = z
  .string()
  .max(256)
  .refine((text) => {
    try {
      return new URL(text).origin === text;
    } catch {
      return false;
    }
  }, "an origin: scheme://host[:port], nothing after it");

/** Where one argument goes in the outbound HTTP request (`name`: its name there, by default the argument's). */
export const ArgPlacement = z.strictObject({
  in: z.enum(["path", "query", "header", "body"]),
  name: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,64}$/)
    .optional(),
});

/**
 * An HTTP call: `method` to `origin` + `path`, where `{name}` in the path is the argument `name`
 * (URL-encoded). Each other argument goes where `args` says, by default the query for GET and
 * DELETE and a JSON body otherwise. `headers` are fixed ones; the credential header is added last.
 */
export const HttpBinding = z.strictObject({
  kind: z.literal("http"),
  method: z.enum(["GET", "POST", "PUT", "PATCH", "DELETE"]),
  origin: Origin,
  path: z
    .string()
    .max(1024)
    .regex(/^\/[^?#]*$/, "a path starting with /, no query or fragment"),
  args: z.record(z.string(), ArgPlacement).default({}),
  headers: z.record(z.string().regex(/^[A-Za-z0-9-]{1,64}$/), z.string().max(1024)).default({}),
  ...common,
});
/** One of {@link HttpBinding}. */
export type HttpBinding = z.infer<typeof HttpBinding>;

/** A tool of an upstream MCP server over Streamable HTTP, served under the Oxagen tool's name. */
export const McpBinding = z.strictObject({
  kind: z.literal("mcp"),
  url: z
    .string()
    .max(1024)
    .refine((text) => URL.canParse(text), "a URL"),
  tool: z
    .string()
    .min(1)
    .max(128)
    .regex(/^[A-Za-z0-9_.-]+$/),
  ...common,
});
/** One of {@link McpBinding}. */
export type McpBinding = z.infer<typeof McpBinding>;

/** A tool's binding. */
export const Binding = z.discriminatedUnion("kind", [HttpBinding, McpBinding]);
/** One of {@link Binding}. */
export type Binding = z.infer<typeof Binding>;

const primitive = z.union([z.string().max(1024), z.number(), z.boolean(), z.null()]);

/** A narrowing of one argument's schema: what an access clause allows of it, shown to the model in the listed schema. */
export const Narrowing = z
  .strictObject({
    maximum: z.number().optional(),
    minimum: z.number().optional(),
    exclusiveMaximum: z.number().optional(),
    exclusiveMinimum: z.number().optional(),
    enum: z.array(primitive).min(1).max(256).optional(),
    const: primitive.optional(),
    pattern: z
      .string()
      .max(512)
      .refine((p) => {
        try {
          new RegExp(p, "u");
          return true;
        } catch {
          return false;
        }
      }, "a regular expression")
      .optional(),
    maxLength: z.number().int().nonnegative().optional(),
    minLength: z.number().int().nonnegative().optional(),
    maxItems: z.number().int().nonnegative().optional(),
  })
  .refine((n) => Object.keys(n).length > 0, "a narrowing says at least one thing");
/** One of {@link Narrowing}. */
export type Narrowing = z.infer<typeof Narrowing>;

/**
 * An access clause: the first clause whose subject matches the caller decides. `deny` hides the
 * tool from that caller (it is not listed, and a call is an unknown tool); `allow` lists it, with
 * `arguments` narrowing the input schema (a call outside it is refused with this clause's id). A
 * subject field left out matches every caller; `hosts` never matches a direct client.
 */
export const AccessClause = z.strictObject({
  id: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/),
  decision: z.enum(["allow", "deny"]),
  /** Globs over the caller's agent: a gateway call's harness label (claude-code, codex, a custom agent), a direct token's agent. */
  agents: z.array(glob).min(1).max(64).optional(),
  hosts: z.array(HostId).min(1).max(256).optional(),
  callers: z
    .array(z.enum(["gateway", "direct"]))
    .min(1)
    .max(2)
    .optional(),
  arguments: z.record(z.string(), Narrowing).optional(),
});
/** One of {@link AccessClause}. */
export type AccessClause = z.infer<typeof AccessClause>;

/** A call-count limit: at most `max_calls` forwarded calls of the tool per scope instance in each window (UTC). */
export const CallLimit = z.strictObject({
  id: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/),
  scope: z.enum(["workspace", "host", "agent", "run"]),
  window: z.enum(["hour", "day", "month", "run"]),
  max_calls: z.number().int().nonnegative().max(1_000_000_000),
});
/** One of {@link CallLimit}. */
export type CallLimit = z.infer<typeof CallLimit>;

const unique = (items: { id: string }[]) => new Set(items.map((i) => i.id)).size === items.length;

const accessList = z.array(AccessClause).max(64).refine(unique, "a clause id is used twice");
const cost = z.number().int().nonnegative().max(1_000_000_000);
const limitList = z.array(CallLimit).max(16).refine(unique, "a limit id is used twice");

/** The access and budget parts of a tool, which an operator changes without a new approval. */
const rules = { access: accessList.default([]), cost_microusd: cost.default(0), limits: limitList.default([]) };

/**
 * `POST /v1/tools`. An `http` tool takes its description and input schema from here; an `mcp`
 * tool from its upstream's listing at creation (the approval), unless given here, which is then
 * checked to be exactly the upstream's.
 */
export const ToolInput = z.strictObject({
  name: ToolName,
  title: z.string().min(1).max(128).optional(),
  description: z.string().min(1).max(8192).optional(),
  input_schema: jsonObject.optional(),
  annotations: jsonObject.optional(),
  binding: Binding,
  /** Write-only: encrypted at rest, never answered. */
  credential: z.string().min(1).max(8192).optional(),
  ...rules,
});
/** One of {@link ToolInput}. */
export type ToolInput = z.infer<typeof ToolInput>;

/** `PATCH /v1/tools/:name`: the rules, the status, the credential (`null` removes it); the definition changes only by approval. */
export const ToolPatch = z.strictObject({
  access: accessList.optional(),
  cost_microusd: cost.optional(),
  limits: limitList.optional(),
  status: z.enum(["active", "disabled"]).optional(),
  credential: z.string().min(1).max(8192).nullable().optional(),
});
/** One of {@link ToolPatch}. */
export type ToolPatch = z.infer<typeof ToolPatch>;
