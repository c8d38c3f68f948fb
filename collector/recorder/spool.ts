import { existsSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";

/**
 * Takes the spool for replay: moves spool/events.jsonl aside first (a `tacho hook` that spools
 * meanwhile starts a new file, nothing is lost), and does the same with spool/dropped. A replay
 * file left by a crash is taken again: event ids make that harmless.
 */
export function takeSpool(spoolDir: string): { lines: Record<string, unknown>[]; dropped: number; done: () => void } {
  const events = join(spoolDir, "events.jsonl");
  const replaying = join(spoolDir, "replaying.jsonl");
  const dropped = join(spoolDir, "dropped");
  const droppedReplaying = join(spoolDir, "dropped.replaying");
  if (!existsSync(replaying) && existsSync(events)) renameSync(events, replaying);
  if (!existsSync(droppedReplaying) && existsSync(dropped)) renameSync(dropped, droppedReplaying);
  const lines: Record<string, unknown>[] = [];
  if (existsSync(replaying)) {
    for (const text of readFileSync(replaying, "utf8").split("\n")) {
      if (!text.trim()) continue;
      try {
        const v = JSON.parse(text) as unknown;
        if (v !== null && typeof v === "object" && !Array.isArray(v)) lines.push(v as Record<string, unknown>);
      } catch {
        // A torn line is one `tacho hook` never finished writing.
      }
    }
  }
  let count = 0;
  if (existsSync(droppedReplaying)) {
    const n = Number.parseInt(readFileSync(droppedReplaying, "utf8").trim(), 10);
    count = Number.isFinite(n) && n > 0 ? n : 0;
  }
  return {
    lines,
    dropped: count,
    done: () => {
      rmSync(replaying, { force: true });
      rmSync(droppedReplaying, { force: true });
    },
  };
}
