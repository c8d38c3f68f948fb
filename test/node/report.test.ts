import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { hostReport } from "../../collector/daemon/report.ts";
import type { HostConfig } from "../../collector/lib/state.ts";

const host = { host_id: "h-1", harnesses: ["claude-code"], ports: { hooks: 47110, gateway: 47111 } } as HostConfig;
const chain = (harness: string, frames: number, oldest: number | null) => ({
  harness,
  session_id: "s",
  frames,
  locks: 0,
  bodies: 0,
  final: false,
  oldest_pending_ms: oldest,
});
const saved = process.env.CLAUDE_CONFIG_DIR;
afterEach(() => {
  process.env.CLAUDE_CONFIG_DIR = saved;
});

describe("the recorder's host report", () => {
  it("sums pending frames per harness or custom agent with the oldest time, and says when a harness's hooks are missing", () => {
    process.env.CLAUDE_CONFIG_DIR = mkdtempSync(join(tmpdir(), "oxagen-report-"));
    const report = hostReport(host, {
      chains: { a: chain("my-agent", 3, 500), b: chain("my-agent", 2, 200), c: chain("claude-code", 0, null) },
      spool: { events: 0, dropped: 0, oldest_ms: null, by_label: {} },
    });
    expect(report.agents).toEqual([
      { name: "claude-code", pending_frames: 0, oldest_pending_ms: null, hooks_ok: false },
      { name: "my-agent", pending_frames: 5, oldest_pending_ms: 200, hooks_ok: true },
    ]);
  });

  it("counts hook events waiting in the spool as pending, since they were spooled (a computer with stranded events is not healthy)", () => {
    process.env.CLAUDE_CONFIG_DIR = mkdtempSync(join(tmpdir(), "oxagen-report-"));
    const report = hostReport(host, {
      chains: { a: chain("my-agent", 1, 900) },
      spool: {
        events: 3,
        dropped: 0,
        oldest_ms: 100,
        by_label: {
          "my-agent": { events: 2, oldest_ms: 100 },
          "claude-code": { events: 1, oldest_ms: 400 },
          "Not A Label": { events: 1, oldest_ms: 1 },
        },
      },
    });
    expect(report.agents).toEqual([
      { name: "claude-code", pending_frames: 1, oldest_pending_ms: 400, hooks_ok: false },
      { name: "my-agent", pending_frames: 3, oldest_pending_ms: 100, hooks_ok: true },
    ]);
  });
});
