import { assembleBundle, bytesToHex, emptyTally, fromHex, keyIdFor } from "../../protocol/index.ts";
import type { ChainObject } from "../chain-object.ts";
import type { ExportHead, ExportPage, ExportPageRequest } from "../chain/export.ts";
import type { ServerKey } from "../keys.ts";
import { manifestRun, runRow } from "./run-rows.ts";

/** The chain object's page method, as the Worker calls it. */
type Chain = Pick<DurableObjectStub<ChainObject>, "exportPage">;

/**
 * Streams a run's version-2 bundle (`protocol/bundle-stream.ts`) page by page from its chain
 * object, signed over its running hash in the last line. What the Worker holds at any time does
 * not grow with the run's frames: the page being written (at most `PAGE_CHARS` of lines, about
 * 1 MiB, held as text and as bytes), at most one chunk queued in the stream, and the running tally
 * and hash. The chain's own gaps come out of the tally, so until the gap list is written it holds
 * a few dozen bytes for each `telemetry_gap` frame and each body over 1 MiB the run names.
 */
export function bundleStream(chain: Chain, head: ExportHead, key: ServerKey, exportedMs: number): ReadableStream<Uint8Array> {
  const chunks = assembleBundle(parts(chain, head, exportedMs, key.keyId), key.secret, key.keyId);
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        for (;;) {
          const next = await chunks.next();
          if (next.done) return controller.close();
          if (next.value.length > 0) return controller.enqueue(next.value);
        }
      } catch (err) {
        // The status line is sent: a bundle cut short has no signature line, which verifiers refuse.
        console.error("export failed", head.summary.chain, err);
        controller.error(err);
      }
    },
    async cancel() {
      await chunks.return(undefined);
    },
  });
}

function parts(chain: Chain, head: ExportHead, exportedMs: number, keyId: string) {
  const run = manifestRun(runRow(head.summary, exportedMs), head.mode);
  const hostKey = fromHex(head.hostKey, 32);
  // A section's pages, one RPC at a time, each read once the one before is written; `at` is where
  // the next page starts (null for the first).
  async function* section<T>(request: (at: number | string | null) => ExportPageRequest, pick: (p: ExportPage) => T) {
    for (let req: ExportPageRequest | null = request(null); req; ) {
      const page: ExportPage = await chain.exportPage(req);
      yield pick(page);
      req = page.next === null ? null : request(page.next);
    }
  }
  const from = (at: number | string | null) => Number(at ?? 0);
  return {
    head: { run, exported_ms: exportedMs, server_key_id: keyId, host_key: { pub: bytesToHex(hostKey), key_id: keyIdFor(hostKey) } },
    locks: section(
      (at) => ({ section: "locks", from: from(at), to: head.locks }),
      (p) => p.lines,
    ),
    frames: section(
      (at) => ({ section: "frames", from: from(at), to: head.frames }),
      (p) => ({ lines: p.lines, tally: p.tally ?? emptyTally() }),
    ),
    equivocations: section(
      (at) => ({ section: "equivocations", after: from(at), upTo: head.equivocations }),
      (p) => p.lines,
    ),
    serverGaps: section(
      (at) => ({ section: "gaps", after: from(at), upTo: head.gaps }),
      (p) => p.gaps,
    ),
    missingBodies: head.missingBodies
      ? section(
          (at) => ({ section: "missing_bodies", after: at === null ? "" : String(at), frames: head.frames }),
          (p) => p.bodies,
        )
      : empty(),
  };
}

async function* empty(): AsyncGenerator<never> {}
