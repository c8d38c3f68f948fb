// The record path every side of the gateway shares: the session's run, and the recorder's one
// append path (Recorder.recordGateway), which never throws into a request handler.
import type { Step } from "../recorder/mapper.ts";
import type { Recorder } from "../recorder/recorder.ts";
import type { GatewaySession } from "./session.ts";

/** What each side of the gateway needs from the recorder. */
export interface GatewaySink {
  /** The run a session's call belongs to (for a paused run); null for a call tied to none. */
  runId(session: GatewaySession | null): string | null;
  /**
   * Appends frames to the session's chain (the computer's own when null), once per id (or the id a
   * function gives for the chain they go on); through the recorder's one append path. Never throws: a failure is logged.
   */
  record(session: GatewaySession | null, steps: Step[], t: number, id: string | null | ((chain: string) => string)): void;
  /** The enrollment's secret every call must carry (header x-oxagen-hook-secret); null for an enrollment without one. */
  secret(now?: boolean): string | null;
  log(msg: string): void;
}

/** The recorder as each side of the gateway records through it. */
export function recordPath(recorder: Recorder, secret: (now?: boolean) => string | null): GatewaySink {
  return {
    secret,
    runId: (session) => recorder.gatewayRun(session),
    // A refusal's or an answered call's frame: the client's answer does not wait on it, and a
    // journal that cannot take it must not throw inside the request handler (that would stop the recorder).
    record: (session, steps, t, id) => {
      try {
        recorder.recordGateway(session, steps, t, id);
      } catch (err) {
        recorder.log(`gateway: the ${steps[0]?.kind ?? "gateway"} frame of a call could not be recorded: ${(err as Error).message}`);
      }
    },
    log: (msg) => recorder.log(msg),
  };
}
