import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import type { Policy } from "../../../protocol/index.ts";
import type { Step } from "../../recorder/mapper.ts";
import type { LaterStep } from "../../recorder/gateway-steps.ts";
import { type Carried, llmCallStep } from "./record.ts";

/**
 * Calls whose bodies together are at least this large are redacted and hashed on a worker thread;
 * smaller ones on the event loop, where they cost less than posting them (measured: see
 * docs/collector.md, "The gateway").
 */
export const OFFLOAD_BYTES = 16 * 1024;
const WORKERS = Math.max(1, Math.min(2, availableParallelism() - 1));

/** What the worker is asked: one call's `llm_call`. */
export interface BodyJob {
  n: number;
  call: Carried;
  retention: Policy["retention"] | null;
}
export type BodyAnswer = { n: number; step: Step } | { n: number; error: string };

interface Slot {
  worker: Worker;
  waiting: Map<number, { resolve(s: Step): void; reject(e: Error): void }>;
}

const slots: (Slot | null)[] = Array.from({ length: WORKERS }, () => null);
let jobs = 0;
/** Workers that failed (could not start, died): past a few, calls are prepared here. */
let failures = 0;
const MAX_FAILURES = 3;

function start(i: number): Slot {
  const worker = new Worker(new URL("./body-worker.ts", import.meta.url));
  const slot: Slot = { worker, waiting: new Map() };
  const gone = (err: Error) => {
    if (slots[i] !== slot) return;
    slots[i] = null;
    failures++;
    for (const w of slot.waiting.values()) w.reject(err);
    slot.waiting.clear();
  };
  worker.on("message", (a: BodyAnswer) => {
    const w = slot.waiting.get(a.n);
    if (!w) return;
    slot.waiting.delete(a.n);
    if ("step" in a) w.resolve(a.step);
    else w.reject(new Error(a.error));
  });
  worker.on("error", gone);
  worker.on("exit", (code) => gone(new Error(`the gateway's body worker exited (${code})`)));
  // Never what keeps a process up: whoever waits on a call completes it in place at stop. After the
  // listeners: adding a "message" listener refs the worker's port again (a stopped recorder stayed up).
  worker.unref();
  slots[i] = slot;
  return slot;
}

/** The `llm_call` of a carried call, prepared on a worker thread (the least busy). */
function onWorker(call: Carried, retention: Policy["retention"] | null): Promise<Step> {
  let best = 0;
  for (let i = 1; i < WORKERS; i++) if ((slots[i]?.waiting.size ?? 0) < (slots[best]?.waiting.size ?? 0)) best = i;
  const slot = slots[best] ?? start(best);
  const n = ++jobs;
  return new Promise((resolve, reject) => {
    slot.waiting.set(n, { resolve, reject });
    slot.worker.postMessage({ n, call, retention } satisfies BodyJob);
  });
}

/** The step made on this thread once the I/O waiting now (the next calls) has run: never in the response's own end handler. */
function soon(make: () => Step): Promise<Step> {
  return new Promise((resolve, reject) =>
    setImmediate(() => {
      try {
        resolve(make());
      } catch (err) {
        reject(err);
      }
    }),
  );
}

/**
 * A carried call's `llm_call` for the recorder (Recorder.recordGateway): its place in the chain and
 * its id are taken at once; its bodies are redacted and hashed on a worker when large, else here,
 * after the I/O already waiting (the next calls are handled first); the same function (llmCallStep,
 * makeBody's redaction) either way.
 */
export function carriedStep(call: Carried, retention: Policy["retention"] | null, onError: (err: Error) => void): LaterStep {
  const size = call.request.length + (call.response?.length ?? 0);
  return {
    now: () => llmCallStep(call, retention),
    later: () => (size >= OFFLOAD_BYTES && failures < MAX_FAILURES ? onWorker(call, retention) : soon(() => llmCallStep(call, retention))),
    onError,
  };
}
