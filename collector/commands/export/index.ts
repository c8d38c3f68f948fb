import { join, resolve } from "node:path";
import { exportFileName } from "../../../protocol/index.ts";
import { parse } from "../../lib/args.ts";
import { UsageError } from "../../lib/errors.ts";
import { EXIT, EXIT_HELP, operatorApi, printJson, runArg } from "../../lib/operator.ts";
import { reportResult, toJson, verifyFile } from "../verify/index.ts";
import { fetchBodies } from "./bodies.ts";
import { downloadBundle } from "./download.ts";
import { keysFor } from "./keys.ts";

export const USAGE = `usage: oxagen export RUN [-o FILE] [--verify] [--bodies DIR] [--json]

Exports a run's signed bundle (GET /v1/runs/RUN/export) into FILE, streamed, with a progress bar on
a terminal (frames done of the run's total, and the rate); a bundle cut short is not kept. A run
can be exported once it ended, crashed or was sealed.

  -o, --output FILE   where the bundle goes (default RUN.oxagen.jsonl here, the console download's name)
  --bodies DIR        also download every body the bundle names as kept into DIR (files named by
                      their SHA-256, each checked against its name); with --verify they are checked
                      against the record too
  --verify            check the bundle offline, as oxagen verify does, against the server keys
                      pinned at oxagen login (a new server key is taken only when a pinned key
                      endorses it)
  --json              print the result (and with --verify the findings) as JSON

Without --verify: ${EXIT_HELP.replace("Exit codes: ", "")}
With --verify, once the bundle is here, the verdict's codes: 0 valid and complete, 1 tampered,
2 cannot verify, 3 valid but incomplete.`;

export async function exportRun(args: string[]): Promise<number> {
  const { values, positionals } = parse("oxagen export", args, {
    output: { type: "string", short: "o" },
    bodies: { type: "string" },
    verify: { type: "boolean", default: false },
    json: { type: "boolean", default: false },
  });
  const id = runArg("oxagen export", positionals, USAGE);
  if (values.output === "") throw new UsageError("oxagen export: -o takes a file name");
  const file = resolve(values.output ?? join(process.cwd(), exportFileName(id)));
  const api = operatorApi("oxagen export");
  const run = await api.json<{ frame_count: number; status: string }>(`/v1/runs/${id}`);
  const progress = !values.json;
  const got = await downloadBundle(api, id, file, run.frame_count, progress);
  const bodies = values.bodies !== undefined ? await fetchBodies(api, got.bodies, resolve(values.bodies), progress) : null;
  const summary = {
    run: id,
    file,
    bytes: got.bytes,
    frames: got.frames,
    bodies_named: got.bodies.size,
    ...(bodies
      ? { bodies: { dir: resolve(values.bodies!), downloaded: bodies.downloaded, present: bodies.present, missing: bodies.missing } }
      : {}),
  };
  const lines = [`exported ${id} to ${file} (${got.frames.toLocaleString("en-US")} frames, ${got.bytes.toLocaleString("en-US")} bytes)`];
  if (bodies)
    lines.push(
      `bodies in ${summary.bodies!.dir}: ${bodies.downloaded} downloaded, ${bodies.present} already there${bodies.missing.length > 0 ? `, ${bodies.missing.length} the server does not hold (the record names them; see the run's gaps)` : ""}`,
    );
  if (!values.verify) {
    if (values.json) printJson(summary);
    else process.stdout.write(`${lines.join("\n")}\n`);
    return EXIT.ok;
  }
  const keys = await keysFor(api, got.serverKeyId);
  if (keys.said) lines.push(keys.said);
  const result = verifyFile(file, {
    serverKey: keys.keys,
    ...(values.bodies !== undefined ? { bodiesDir: resolve(values.bodies) } : {}),
    progress,
    totalFrames: got.frames,
  });
  if (values.json) printJson({ ...summary, keys: keys.said, verify: toJson(result) });
  else process.stdout.write(`${lines.join("\n")}\n\n${reportResult(result, false)}`);
  return result.exit;
}
