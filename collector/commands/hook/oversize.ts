import { MAX_BODY_BYTES } from "../../../protocol/index.ts";
import { useNodeCrypto } from "../../lib/node-crypto.ts";
import { bodySize, cutOversize } from "../../recorder/bodies.ts";

/**
 * A payload over 1 MiB as `tacho hook` forwards it: every value whose body would be over 1 MiB
 * (a top-level field, or Stella's `tool.input`) is replaced by the SHA-256 and size of its real
 * bytes, redacted first as the recorder would (recorder/bodies.ts), so the record names the real
 * content and says it was not kept. The rest travels as it came.
 */
export function cutPayload(harness: string | null, event: Record<string, unknown>): Record<string, unknown> {
  useNodeCrypto();
  const cut = (v: unknown) => (bodySize(v) > MAX_BODY_BYTES ? cutOversize(v) : v);
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(event)) {
    const tool = value as Record<string, unknown> | null;
    out[key] =
      harness === "stella" && key === "tool" && tool !== null && typeof tool === "object" && !Array.isArray(tool)
        ? { ...tool, input: cut(tool.input) }
        : cut(value);
  }
  return out;
}
