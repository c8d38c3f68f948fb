// The gateway's body worker (see offload.ts): redacts and hashes a carried call's bodies with the
// recorder's own functions, off the recorder's event loop.
import { parentPort } from "node:worker_threads";
import { useNodeCrypto } from "../../lib/node-crypto.ts";
import type { BodyJob, BodyAnswer } from "./offload.ts";
import { llmCallStep } from "./record.ts";

useNodeCrypto();
const port = parentPort!;
const buffer = (u: Uint8Array) => Buffer.from(u.buffer, u.byteOffset, u.byteLength);

port.on("message", ({ n, call, retention }: BodyJob) => {
  let answer: BodyAnswer;
  // The kept bodies' bytes move to the recorder's thread rather than being copied (each owns its buffer).
  const moved: ArrayBuffer[] = [];
  try {
    const step = llmCallStep({ ...call, request: buffer(call.request), response: call.response ? buffer(call.response) : null }, retention);
    for (const b of step.bodies) {
      const u = b.bytes;
      if (u && u.byteOffset === 0 && u.byteLength === u.buffer.byteLength && u.buffer instanceof ArrayBuffer) moved.push(u.buffer);
    }
    answer = { n, step };
  } catch (err) {
    answer = { n, error: (err as Error).message };
  }
  port.postMessage(answer, moved);
});
