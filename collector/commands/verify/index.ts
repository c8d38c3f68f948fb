import { closeSync, fstatSync, openSync, readFileSync, readSync, statSync } from "node:fs";
import { join } from "node:path";
import {
  type BundleSource,
  type CoverageStatement,
  coverageStatement,
  coverageText,
  type Finding,
  fromHex,
  isHex,
  localChecker,
  type PinnedKey,
  pinKey,
  plural,
  pinKeyList,
  STATEMENT,
  type VerifyResult,
  verifySource,
} from "../../../protocol/index.ts";
import { parse } from "../../lib/args.ts";
import { ExitError, UsageError } from "../../lib/errors.ts";
import { useNodeCrypto } from "../../lib/node-crypto.ts";
import { parallelChecker } from "./parallel.ts";
import { progressBar } from "./progress.ts";

export const USAGE = `usage: oxagen verify BUNDLE (--server-key KEY ... | --server-keys FILE) [--bodies DIR] [--expect-head HEX] [--json]

Checks an export bundle offline, with no network: the server's signature against a pinned key,
every frame hash and link, seq continuity, every lock, and the gaps the bundle lists against what
the chain shows. It goes on after the first failure and prints one finding per problem.

  --server-key KEY     a pinned server public key (64 hex characters, or a file holding them); repeat for several
  --server-keys FILE   the pinned server keys as JSON (the answer of GET /v1/keys)
  --bodies DIR         also check each body in DIR (files named by their sha256) against the record
  --expect-head HEX    the chain head you were given out of band: a bundle ending elsewhere fails
  --json               print the findings as JSON

Exit 0 valid and complete, 1 tampered, 2 cannot verify (unreadable, unknown version, missing
key), 3 valid but incomplete (not final-locked, frames after the last lock, gaps).`;
const RESULT_WORD = { 0: "VALID", 1: "TAMPERED", 2: "CANNOT VERIFY", 3: "VALID BUT INCOMPLETE" } as const;

/** Below this size one thread is faster than starting a second. */
const PARALLEL_MIN_BYTES = 2 * 1024 * 1024;

export async function verify(args: string[]): Promise<number> {
  const { values, positionals } = parse("oxagen verify", args, {
    "server-key": { type: "string", multiple: true },
    "server-keys": { type: "string" },
    bodies: { type: "string" },
    "expect-head": { type: "string" },
    json: { type: "boolean", default: false },
  });
  if (positionals.length !== 1) throw new UsageError(`oxagen verify: name exactly one bundle\n${USAGE}`);
  const keyArgs = values["server-key"] ?? [];
  const keyList = values["server-keys"];
  if (keyArgs.length === 0 && keyList === undefined) {
    throw new UsageError(`oxagen verify: --server-key or --server-keys is required (the server's pinned public keys)\n${USAGE}`);
  }
  const expectHead = values["expect-head"];
  if (expectHead !== undefined && !isHex(expectHead, 32))
    throw new UsageError("oxagen verify: --expect-head takes 64 lowercase hex characters");
  const serverKey: PinnedKey[] = [...keyArgs.map((k) => pinKey(readKey(k))), ...(keyList !== undefined ? readKeyList(keyList) : [])];
  const bodiesDir = values.bodies;
  if (bodiesDir !== undefined && !isDirectory(bodiesDir)) throw new ExitError(2, `oxagen verify: --bodies ${bodiesDir} is not a folder`);

  const result = verifyFile(positionals[0]!, {
    serverKey,
    ...(expectHead !== undefined ? { expectHead } : {}),
    ...(bodiesDir !== undefined ? { bodiesDir } : {}),
    progress: !values.json,
  });
  process.stdout.write(reportResult(result, values.json ?? false));
  return result.exit;
}

/** How {@link verifyFile} checks a bundle file. */
export interface VerifyFileOptions {
  serverKey: PinnedKey[];
  expectHead?: string;
  /** A folder of bodies named by their sha256, checked against the record. */
  bodiesDir?: string;
  /** A progress bar on stderr when it is a terminal (frames read of `totalFrames`, or of an estimate). */
  progress: boolean;
  totalFrames?: number;
}

/** Checks a bundle file offline (the checks `oxagen verify` makes); an unreadable file is an ExitError with code 2. */
export function verifyFile(path: string, o: VerifyFileOptions): VerifyResult {
  useNodeCrypto();
  const bar = o.progress
    ? progressBar(process.stderr, undefined, { unit: "frames", ...(o.totalFrames !== undefined ? { total: o.totalFrames } : {}) })
    : null;
  const { source, close } = openBundle(path);
  const checker =
    source.size >= PARALLEL_MIN_BYTES ? parallelChecker() : { ...localChecker(source.size, (n) => Buffer.alloc(n)), close: () => {} };
  const bodiesDir = o.bodiesDir;
  try {
    return verifySource(
      source,
      {
        serverKey: o.serverKey,
        ...(o.expectHead !== undefined ? { expectHead: o.expectHead } : {}),
        ...(bodiesDir !== undefined ? { body: (sha: string) => readBody(bodiesDir, sha) } : {}),
        ...(bar ? { onProgress: bar.update } : {}),
      },
      checker,
    );
  } finally {
    checker.close();
    close();
    bar?.done();
  }
}

/** A verification's result as `oxagen verify` prints it: the findings, what it proves, the coverage statement; or as JSON. */
export function reportResult(result: VerifyResult, json: boolean): string {
  return json ? `${JSON.stringify(toJson(result), null, 2)}\n` : render(result);
}

function readKey(arg: string): Uint8Array {
  let text = arg;
  if (!isHex(arg, 32)) {
    try {
      text = readFileSync(arg, "utf8").trim();
    } catch {
      throw new ExitError(2, `oxagen verify: cannot read the server key ${arg}`);
    }
  }
  if (!isHex(text, 32)) throw new ExitError(2, "oxagen verify: the server key must be 64 lowercase hex characters (an Ed25519 public key)");
  return fromHex(text, 32);
}

function readKeyList(path: string): PinnedKey[] {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code ?? "not JSON";
    throw new ExitError(2, `oxagen verify: cannot read the server keys ${path} (${why})`);
  }
  try {
    return pinKeyList(value);
  } catch (err) {
    throw new ExitError(2, `oxagen verify: ${path} is ${(err as Error).message} (the answer of GET /v1/keys)`);
  }
}

// The bundle, read by position: a version-2 bundle is read once from start to end, a block at a time.
function openBundle(path: string): { source: BundleSource; close: () => void } {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch (err) {
    throw new ExitError(2, `oxagen verify: cannot open ${path}: ${(err as NodeJS.ErrnoException).code ?? "error"}`);
  }
  const st = fstatSync(fd);
  if (!st.isFile()) {
    closeSync(fd);
    throw new ExitError(2, `oxagen verify: ${path} is not a file`);
  }
  return {
    source: { size: st.size, read: (into, at, length, position) => readSync(fd, into, at, length, position) },
    close: () => closeSync(fd),
  };
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function readBody(dir: string, sha: string): Uint8Array | null {
  if (!isHex(sha, 32)) return null;
  try {
    return readFileSync(join(dir, sha));
  } catch {
    return null;
  }
}

/** The result as `oxagen verify --json` prints it. */
export function toJson(r: VerifyResult) {
  return {
    exit: r.exit,
    result: RESULT_WORD[r.exit].toLowerCase().replaceAll(" ", "_"),
    first_broken_seq: r.firstBrokenSeq,
    summary: r.summary,
    findings: r.findings,
    proves: STATEMENT.proves,
    does_not_prove: STATEMENT.doesNotProve,
    coverage_statement: statementOf(r),
  };
}

// The run's coverage statement, from what the bundle's own frames show (not what it claims).
function statementOf(r: VerifyResult): CoverageStatement | null {
  const s = r.summary;
  if (s.harness === null || s.coverage === null) return null;
  return coverageStatement({ harness: s.harness, facts: s.coverage, gapCounts: s.gapCounts });
}

function render(r: VerifyResult): string {
  const s = r.summary;
  const lines: string[] = [];
  if (s.run) {
    lines.push(
      `run ${s.run}: ${plural(s.frames, "frame")}, ${plural(s.locks, "lock")} (${plural(s.lockedFrames, "frame")} locked, final lock: ${s.finalLocked ? "yes" : "no"}), ${plural(s.gaps, "gap")}`,
    );
    lines.push(`tier ${s.tier}, grade ${s.grade}, head ${s.head}${s.bodiesChecked ? `, ${s.bodiesChecked} bodies checked` : ""}`);
  }
  const shown = r.findings.filter((f) => f.severity !== "note" || r.findings.length < 50);
  for (const f of shown.slice(0, 200)) lines.push(formatFinding(f));
  if (shown.length > 200) lines.push(`… and ${shown.length - 200} more findings (use --json for all)`);
  if (r.firstBrokenSeq !== null) lines.push(`first broken seq: ${r.firstBrokenSeq}`);
  lines.push(`result: ${RESULT_WORD[r.exit]} (exit ${r.exit})`);
  if (r.exit === 0 || r.exit === 3) {
    lines.push("", "A valid bundle proves:", ...STATEMENT.proves.map((p) => `  - ${p}`));
    lines.push("It does not prove:", ...STATEMENT.doesNotProve.map((p) => `  - ${p}`));
  }
  const coverage = statementOf(r);
  return `${lines.join("\n")}\n${coverage ? `\n${coverageText(coverage)}` : ""}`;
}

function formatFinding(f: Finding): string {
  return `  ${f.severity.toUpperCase().padEnd(12)} ${f.code.padEnd(22)} ${f.where.padEnd(12)} ${f.message}`;
}
