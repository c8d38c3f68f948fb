import type { Policy } from "../../../protocol/index.ts";
import { bodyFields, makeBody } from "../bodies.ts";
import { deriveFrames } from "../derive.ts";
import type { Step } from "../mapper.ts";
import type { CodexTool } from "./codex.ts";

/**
 * The frames for a Codex tool call read from the rollout because its hook did not fire: a
 * tool_call (hashes and sizes of input and output, via the same redaction as hooks) and what the
 * tool was asked to do. No policy decision comes before it: none was made.
 */
export function codexToolSteps(tool: CodexTool, retention: Policy["retention"] | null): Step[] {
  const input = makeBody("tool_input", tool.input, retention);
  const output = makeBody("tool_output", tool.output, retention);
  const payload: Record<string, unknown> = {
    path: "transcript",
    tool_name: tool.name.slice(0, 256),
    tool_use_id: tool.call_id.slice(0, 256),
    status: tool.exit_code !== undefined && tool.exit_code !== 0 ? "error" : "ok",
    ...(tool.exit_code !== undefined ? { exit_code: tool.exit_code } : {}),
    ...(tool.duration_ms !== undefined ? { duration_ms: tool.duration_ms } : {}),
    input: input.digest,
    output: output.digest,
    ...bodyFields([input, output]),
  };
  const steps: Step[] = [{ kind: "tool_call", payload, bodies: [input, output] }];
  for (const d of deriveFrames(tool.name, tool.input, tool.call_id))
    steps.push({ kind: d.kind, payload: { path: "transcript", ...d.payload }, bodies: [] });
  return steps;
}
