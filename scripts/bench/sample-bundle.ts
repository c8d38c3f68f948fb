// Writes the sample run (test/support/sample-run.ts) padded to any number of frames as a version-2
// bundle file, assembled as the server assembles an export (protocol assembleBundle), a page at a
// time: a bundle of a million frames is written without holding its frames.
import { closeSync, openSync, writeSync } from "node:fs";
import { assembleBundle, emptyTally, frameLine, lockLine, type ParsedPayload, tallyFrame } from "../../protocol/index.ts";
import { HOST_PUBLIC, SERVER_KEY_ID, SERVER_SECRET, sampleRunMeta, sampleSteps } from "../../test/support/sample-run.ts";
import { bytesToHex, keyIdFor } from "../../protocol/index.ts";

const PAGE = 4096;

/** Writes a bundle of about `frames` frames (a lock every 100) to `path`; returns its counts. */
export async function writeSampleBundle(path: string, frames: number): Promise<{ frames: number; locks: number }> {
  const options = { lockEvery: 100, extraToolCalls: Math.max(0, Math.ceil((frames - 6) / 4)) };
  // The locks come before the frames in a bundle, and depend on them: a first pass makes the locks.
  const locks: string[] = [];
  let count = 0;
  let first = 0;
  let last = 0;
  for (const { frame, lock } of sampleSteps(options)) {
    if (frame) {
      if (count++ === 0) first = frame.t;
      last = frame.t;
    }
    if (lock) locks.push(`${lockLine(lock)}\n`);
  }
  async function* pages() {
    let lines: string[] = [];
    let tally = emptyTally();
    let index = 0;
    for (const { frame } of sampleSteps(options)) {
      if (!frame) continue;
      lines.push(frameLine(frame), "\n");
      tallyFrame(tally, index++, frame.kind, JSON.parse(frame.payload) as ParsedPayload);
      if (lines.length >= 2 * PAGE) {
        yield { lines: lines.join(""), tally };
        lines = [];
        tally = emptyTally();
      }
    }
    if (lines.length) yield { lines: lines.join(""), tally };
  }
  async function* none<T>(): AsyncGenerator<T> {}
  async function* all<T>(items: T) {
    yield items;
  }
  const head = {
    run: sampleRunMeta(first, last),
    exported_ms: last + 60_000,
    server_key_id: SERVER_KEY_ID,
    host_key: { pub: bytesToHex(HOST_PUBLIC), key_id: keyIdFor(HOST_PUBLIC) },
  };
  const fd = openSync(path, "w");
  try {
    const parts = {
      head,
      locks: all(locks.join("")),
      frames: pages(),
      equivocations: none<string>(),
      serverGaps: none<[]>(),
      missingBodies: none<[]>(),
    };
    for await (const bytes of assembleBundle(parts, SERVER_SECRET, SERVER_KEY_ID)) writeSync(fd, bytes);
  } finally {
    closeSync(fd);
  }
  return { frames: count, locks: locks.length };
}
