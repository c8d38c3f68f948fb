import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ExitError } from "../../lib/errors.ts";
import { EXIT, type OperatorApi } from "../../lib/operator.ts";
import { writeFileAtomic } from "../../lib/state.ts";
import { progressBar } from "../verify/progress.ts";

/** What fetching a bundle's bodies did. */
export interface BodiesFetched {
  downloaded: number;
  /** Already in the folder with the right hash. */
  present: number;
  /** Named by the record, but the server does not hold them (not received, or retention). */
  missing: string[];
}

const sha256Hex = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const PARALLEL = 4;

/**
 * Downloads the bodies a bundle names into `dir` (files named by their SHA-256, mode 0600, as
 * `oxagen verify --bodies` reads them), four at a time, skipping the ones already there. A body
 * whose bytes do not hash to its name is refused, never written.
 */
export async function fetchBodies(api: OperatorApi, shas: Set<string>, dir: string, progress: boolean): Promise<BodiesFetched> {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new ExitError(EXIT.usage, `${api.program}: cannot make --bodies ${dir}: ${(err as Error).message}`);
  }
  const todo = [...shas].sort();
  const done: BodiesFetched = { downloaded: 0, present: 0, missing: [] };
  const bar = progress ? progressBar(process.stderr, undefined, { unit: "bodies", total: todo.length }) : null;
  let next = 0;
  let finished = 0;
  const one = async (sha: string) => {
    const path = join(dir, sha);
    if (existsSync(path) && sha256Hex(readFileSync(path)) === sha) {
      done.present++;
      return;
    }
    let res: Response;
    try {
      res = await api.stream(`/v1/bodies/${sha}`);
    } catch (err) {
      if (err instanceof ExitError && err.exitCode === EXIT.refused && /HTTP 404/.test(err.message)) {
        done.missing.push(sha);
        return;
      }
      throw err;
    }
    const bytes = new Uint8Array(await res.arrayBuffer());
    if (sha256Hex(bytes) !== sha)
      throw new ExitError(EXIT.refused, `${api.program}: the server's body ${sha} does not hash to its name; not written`);
    writeFileAtomic(path, bytes);
    done.downloaded++;
  };
  const worker = async () => {
    while (next < todo.length) {
      const sha = todo[next++]!;
      await one(sha);
      finished++;
      bar?.update(finished / todo.length, finished);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(PARALLEL, todo.length) }, worker));
  } finally {
    bar?.done();
  }
  done.missing.sort();
  return done;
}
