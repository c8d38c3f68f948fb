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

describe("a progress bar that counts", () => {
  it("shows how many of the total and the rate", () => {
    const { writes, s } = stream(true);
    const bar = progressBar(s, 0, { unit: "frames", total: 100_000 });
    bar.update(0.25, 25_000);
    expect(writes[0]).toMatch(/\] 25% 25,000 of 100,000 frames · [\d,]+ frames\/s/);
  });

  it("estimates the total from the fraction when it is not known", () => {
    const { writes, s } = stream(true);
    progressBar(s, 0, { unit: "frames" }).update(0.5, 50_000);
    expect(writes[0]).toMatch(/50,000 of ~100,000 frames/);
  });

  it("stays silent when piped, counts or not", () => {
    const pipe = stream(false);
    progressBar(pipe.s, 0, { unit: "frames", total: 10 }).update(0.5, 5);
    expect(pipe.writes).toEqual([]);
  });
});
