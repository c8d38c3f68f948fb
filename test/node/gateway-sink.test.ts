import { describe, expect, it } from "vitest";
import { recorderSink } from "../../collector/gateway/index.ts";
import { answeredStep } from "../../collector/gateway/model/record.ts";
import type { Recorder } from "../../collector/recorder/recorder.ts";

describe("gateway sink", () => {
  it("a refusal's frame the journal cannot take is logged, not thrown into the request handler", () => {
    const logged: string[] = [];
    // Only what recorderSink's record path touches: a journal that fails its append.
    const recorder = {
      host: { host_id: "h-test" },
      policy: null,
      recordGateway: () => {
        throw new Error("ENOSPC: no space left on device");
      },
      log: (m: string) => logged.push(m),
    } as unknown as Recorder;
    const sink = recorderSink(recorder, () => null);
    expect(() => sink.record(null, [answeredStep("upstream_unreachable", 502, "anthropic")], Date.now(), null)).not.toThrow();
    expect(logged).toEqual(["gateway: the error frame of a call could not be recorded: ENOSPC: no space left on device"]);
  });
});
