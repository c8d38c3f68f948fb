import { existsSync, readFileSync } from "node:fs";
import { Journal } from "./journal/index.ts";
import { statePath } from "../lib/state.ts";

/** What is recorded here and not yet delivered: frames, locks and bodies in the journal, events in the spool. */
export function undelivered(): { frames: number; locks: number; bodies: number; spooled: number } {
  const journal = new Journal(statePath("journal"));
  const out = { frames: 0, locks: 0, bodies: 0, spooled: 0 };
  try {
    for (const rec of journal.chains.values()) {
      out.frames += rec.frames.length;
      out.locks += rec.locks.length;
      out.bodies += rec.bodies.length;
    }
  } finally {
    journal.close();
  }
  for (const name of ["events.jsonl", "replaying.jsonl"]) {
    const path = statePath("spool", name);
    if (existsSync(path))
      out.spooled += readFileSync(path, "utf8")
        .split("\n")
        .filter((l) => l.trim()).length;
  }
  return out;
}

/** The sum of {@link undelivered}'s counts. */
export function pendingCount(left: ReturnType<typeof undelivered>): number {
  return left.frames + left.locks + left.bodies + left.spooled;
}
