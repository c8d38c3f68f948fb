import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/server/validators/cf-worker";
import { globMatch } from "../../protocol/index.ts";
import type { AccessClause, Narrowing } from "./schema.ts";

/** Who calls the workspace's MCP endpoint. */
export interface Caller {
  kind: "gateway" | "direct";
  /** The computer whose gateway signed the call; null for a direct client. */
  hostId: string | null;
  /** A gateway call's harness label (from `x-oxagen-agent`), or a direct token's agent. */
  agent: string | null;
  /** The run a gateway call is tied to; null for a call tied to no session and for a direct client. */
  runId: string | null;
  /** A direct client's token id. */
  tokenId: string | null;
}

/** The clause that decides for a caller: the first whose subject matches, or null (no clause: the tool is not served to it). */
export function clauseFor(access: AccessClause[], caller: Caller): AccessClause | null {
  return (
    access.find(
      (a) =>
        (a.callers === undefined || a.callers.includes(caller.kind)) &&
        (a.hosts === undefined || (caller.hostId !== null && a.hosts.includes(caller.hostId))) &&
        (a.agents === undefined || (caller.agent !== null && a.agents.some((g) => globMatch(g, caller.agent!)))),
    ) ?? null
  );
}

type Schema = Record<string, unknown>;

const tighter = (a: unknown, b: number, pick: (x: number, y: number) => number) => (typeof a === "number" ? pick(a, b) : b);

/** One property's schema with a narrowing folded in: bounds take the tighter, enums intersect, a second pattern joins `allOf`. */
function narrowProperty(base: Schema, n: Narrowing): Schema {
  const out: Schema = { ...base };
  if (n.maximum !== undefined) out.maximum = tighter(base.maximum, n.maximum, Math.min);
  if (n.exclusiveMaximum !== undefined) out.exclusiveMaximum = tighter(base.exclusiveMaximum, n.exclusiveMaximum, Math.min);
  if (n.minimum !== undefined) out.minimum = tighter(base.minimum, n.minimum, Math.max);
  if (n.exclusiveMinimum !== undefined) out.exclusiveMinimum = tighter(base.exclusiveMinimum, n.exclusiveMinimum, Math.max);
  if (n.maxLength !== undefined) out.maxLength = tighter(base.maxLength, n.maxLength, Math.min);
  if (n.maxItems !== undefined) out.maxItems = tighter(base.maxItems, n.maxItems, Math.min);
  if (n.minLength !== undefined) out.minLength = tighter(base.minLength, n.minLength, Math.max);
  if (n.enum !== undefined) out.enum = Array.isArray(base.enum) ? n.enum.filter((v) => (base.enum as unknown[]).includes(v)) : n.enum;
  if (n.const !== undefined) out.const = n.const;
  if (n.pattern !== undefined) {
    if (typeof base.pattern === "string" && base.pattern !== n.pattern)
      out.allOf = [...(Array.isArray(base.allOf) ? base.allOf : []), { pattern: n.pattern }];
    else out.pattern = n.pattern;
  }
  return out;
}

/** The input schema a caller is shown: the tool's, with its clause's argument narrowings folded into each property. */
export function narrowedSchema(inputSchema: Schema, clause: AccessClause | null): Schema {
  if (!clause?.arguments) return inputSchema;
  const properties = { ...((inputSchema.properties as Record<string, Schema> | undefined) ?? {}) };
  for (const [name, n] of Object.entries(clause.arguments)) properties[name] = narrowProperty(properties[name] ?? {}, n);
  return { ...inputSchema, properties };
}

/** The argument names a clause narrows that the input schema has no property for (refused when the tool is written). */
export function unknownArguments(inputSchema: Schema, access: AccessClause[]): string[] {
  const props = (inputSchema.properties as Record<string, unknown> | undefined) ?? {};
  return access.flatMap((a) => Object.keys(a.arguments ?? {}).filter((k) => !Object.hasOwn(props, k)));
}

const validator = new CfWorkerJsonSchemaValidator({ shortcircuit: true });

/** Why a value does not match a JSON Schema, or null when it does (or why the schema itself cannot be used). */
export function schemaProblem(schema: Schema, value: unknown): string | null {
  try {
    const result = validator.getValidator(schema)(value);
    return result.valid ? null : (result.errorMessage ?? "does not match");
  } catch (err) {
    return `the schema cannot be used: ${err instanceof Error ? err.message : String(err)}`;
  }
}

function describe(n: Narrowing): string {
  const parts: string[] = [];
  if (n.const !== undefined) parts.push(`exactly ${JSON.stringify(n.const)}`);
  if (n.enum !== undefined) parts.push(`one of ${n.enum.map((v) => JSON.stringify(v)).join(", ")}`);
  if (n.maximum !== undefined) parts.push(`at most ${n.maximum}`);
  if (n.exclusiveMaximum !== undefined) parts.push(`less than ${n.exclusiveMaximum}`);
  if (n.minimum !== undefined) parts.push(`at least ${n.minimum}`);
  if (n.exclusiveMinimum !== undefined) parts.push(`more than ${n.exclusiveMinimum}`);
  if (n.pattern !== undefined) parts.push(`matching /${n.pattern}/`);
  if (n.maxLength !== undefined) parts.push(`at most ${n.maxLength} characters`);
  if (n.minLength !== undefined) parts.push(`at least ${n.minLength} characters`);
  if (n.maxItems !== undefined) parts.push(`at most ${n.maxItems} items`);
  return parts.join(" and ");
}

/**
 * Checks a call's arguments: against the tool's input schema (a mismatch is refused as
 * `input_schema`), then against each narrowing of the clause that lets the caller use it
 * (refused with the clause's id, saying what the argument must be; the value is never repeated).
 */
export function argumentsRefusal(inputSchema: Schema, clause: AccessClause, args: unknown): { rule: string; reason: string } | null {
  const problem = schemaProblem(inputSchema, args);
  if (problem) return { rule: "input_schema", reason: `the arguments do not match the tool's input schema: ${problem}` };
  const given = (args ?? {}) as Record<string, unknown>;
  for (const [name, n] of Object.entries(clause.arguments ?? {})) {
    if (given[name] === undefined) continue;
    if (schemaProblem(n as Schema, given[name]))
      return { rule: clause.id, reason: `refused by the workspace's access clause ${clause.id}: ${name} must be ${describe(n)}` };
  }
  return null;
}
