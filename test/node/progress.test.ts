import { describe, expect, it } from "vitest";
import { progressBar } from "../../collector/commands/verify/progress.ts";

function stream(isTTY: boolean) {
  const writes: string[] = [];
  return { writes, s: { isTTY, write: (text: string) => writes.push(text) } as unknown as NodeJS.WriteStream };
}

describe("verify's progress bar", () => {
  it("draws on a TTY once the delay has passed, and clears itself", () => {
    const { writes, s } = stream(true);
    const bar = progressBar(s, 0);
    bar.update(0.5);
    bar.done();
    expect(writes[0]).toMatch(/\[#{15} {15}\] 50%/);
    expect(writes.at(-1)).toBe("\r\x1b[K");
  });

  it("stays silent when not on a TTY, and before the delay", () => {
    const pipe = stream(false);
    progressBar(pipe.s, 0).update(0.5);
    expect(pipe.writes).toEqual([]);
    const early = stream(true);
    const bar = progressBar(early.s, 60_000);
    bar.update(0.5);
    bar.done();
    expect(early.writes).toEqual([]);
  });
});
