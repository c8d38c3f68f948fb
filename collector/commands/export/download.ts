import { createWriteStream, renameSync, rmSync } from "node:fs";
import { ExitError } from "../../lib/errors.ts";
import { EXIT, type OperatorApi } from "../../lib/operator.ts";
import { progressBar } from "../verify/progress.ts";

/** What the streamed bundle held, read on the way to the file. */
export interface Downloaded {
  bytes: number;
  frames: number;
  /** The SHA-256 of every body a frame names as kept. */
  bodies: Set<string>;
  /** The server key id the bundle's head line names (a version-2 bundle). */
  serverKeyId: string | null;
}

const FRAME_LINE = '{"seq":';

// A frame line that names bodies: the kept ones' hashes.
function keptBodies(line: string, into: Set<string>): void {
  if (!line.includes('"kept":true')) return;
  try {
    const bodies = (JSON.parse(line) as { payload?: { bodies?: { sha256?: unknown; kept?: unknown }[] } }).payload?.bodies ?? [];
    for (const b of bodies) if (b.kept === true && typeof b.sha256 === "string") into.add(b.sha256);
  } catch {
    // Not JSON: the verifier names the line; there is nothing to download for it.
  }
}

/**
 * Streams a run's export into `file` (through `file.part`, renamed once the bundle's signature line
 * arrived, so a cut-short export never looks whole), with a progress bar on a terminal: frames
 * done of `totalFrames`, and the rate. On the way it counts the frames and notes the bodies they
 * name.
 */
export async function downloadBundle(
  api: OperatorApi,
  runId: string,
  file: string,
  totalFrames: number,
  progress: boolean,
): Promise<Downloaded> {
  const res = await api.stream(`/v1/runs/${runId}/export`);
  const part = `${file}.part`;
  const out = createWriteStream(part);
  const opened = new Promise<void>((resolve, reject) => {
    out.once("open", () => resolve());
    out.once("error", reject);
  });
  await opened.catch((err: Error) => {
    throw new ExitError(EXIT.usage, `${api.program}: cannot write ${part}: ${err.message}`);
  });
  const bar = progress ? progressBar(process.stderr, undefined, { unit: "frames", total: totalFrames }) : null;
  const got: Downloaded = { bytes: 0, frames: 0, bodies: new Set(), serverKeyId: null };
  const decoder = new TextDecoder();
  let carry = "";
  let last = "";
  const line = (text: string) => {
    if (text.startsWith(FRAME_LINE)) {
      got.frames++;
      keptBodies(text, got.bodies);
    } else if (got.serverKeyId === null && got.frames === 0) {
      got.serverKeyId = /"server_key_id":"([0-9a-f]{16})"/.exec(text)?.[1] ?? null;
    }
    if (text.length > 0) last = text;
  };
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      got.bytes += chunk.byteLength;
      if (!out.write(chunk)) await new Promise<void>((resolve) => out.once("drain", () => resolve()));
      const text = carry + decoder.decode(chunk, { stream: true });
      const lines = text.split("\n");
      carry = lines.pop() ?? "";
      for (const l of lines) line(l);
      bar?.update(totalFrames > 0 ? Math.min(1, got.frames / totalFrames) : 0, got.frames);
    }
    line(carry + decoder.decode());
  } catch (err) {
    out.destroy();
    rmSync(part, { force: true });
    throw new ExitError(EXIT.unreachable, `${api.program}: the export was cut short (${(err as Error).message}); nothing was kept`);
  } finally {
    bar?.done();
  }
  await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
  if (!last.startsWith('{"signature":')) {
    rmSync(part, { force: true });
    throw new ExitError(
      EXIT.unreachable,
      `${api.program}: the export was cut short (it has no signature line); nothing was kept, export it again`,
    );
  }
  renameSync(part, file);
  return got;
}
