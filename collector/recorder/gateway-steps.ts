import type { ChainRecord, Journal, Preparing } from "./journal/index.ts";
import type { Step } from "./mapper.ts";
import type { HookRequest } from "./request.ts";

/**
 * One step whose frame may be prepared off the event loop: `later` starts that (null: not worth
 * it) and resolves to the step `now` makes on this thread, which is used when `later` fails or
 * the step must be in place before something else is written.
 */
export interface LaterStep {
  now(): Step;
  later(): Promise<Step> | null;
  /** Told when the step could not be appended after all. */
  onError(err: Error): void;
}

/** A session as a gateway call names it in its headers. */
export interface GatewaySessionRef {
  harness: string;
  agent: string | null;
  sessionId: string;
}

export function gatewayRequest(s: GatewaySessionRef, t: number): HookRequest {
  return { id: null, t, source: "gateway", harness: s.harness, agent: s.agent, event: { session_id: s.sessionId } };
}

/**
 * Takes a chain place and id now for a gateway step still being prepared (Journal.prepare): `commit`
 * appends it once it is ready, in chain order, or at once on this thread when anything else is
 * about to be written to the chain; `lost` when it could not be appended after all (its id given back).
 */
export function prepareLater(
  journal: Journal,
  rec: ChainRecord,
  call: LaterStep,
  later: Promise<Step> | null,
  id: string | null,
  on: { commit(step: Step): void; lost(err: Error): void },
): void {
  let step: Step | null = later ? null : call.now();
  const p: Preparing = {
    id,
    prepared: step !== null,
    complete: () => {
      const at = rec.preparing.indexOf(p);
      if (at < 0) return;
      rec.preparing.splice(at, 1);
      try {
        on.commit(step ?? call.now());
      } catch (err) {
        if (id !== null) journal.release(rec, id);
        on.lost(err as Error);
      }
    },
  };
  journal.prepare(rec, p);
  later
    ?.then(
      (s) => {
        step = s;
      },
      () => {},
    )
    .finally(() => {
      // Completed in place meanwhile (a hook came first): the worker's step is not used.
      if (!rec.preparing.includes(p)) return;
      p.prepared = true;
      journal.ready(rec, true);
    });
}
