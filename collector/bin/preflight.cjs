// What every entry point (collector/bin/*.js) checks before it loads anything else. Plain CommonJS
// with no syntax newer than Node 16, so an old Node still reaches the message instead of a crash.
// `tacho hook` on such a Node still answers: the harness gets one valid JSON document that fails
// closed at the veto points and names the problem (it never runs the collector itself).

/** @type {[number, number]} */
const MIN = [22, 18];
/** The Node the collector needs, as users read it. */
const MIN_NODE = `${MIN[0]}.${MIN[1]}`;

/**
 * One line saying which Node is needed, or null when this one will do.
 * @param {string} program
 * @param {{ node: string }} [versions]
 * @param {string} [execPath]
 * @returns {string | null}
 */
function nodeProblem(program, versions = process.versions, execPath = process.execPath) {
  const [major = 0, minor = 0] = String(versions.node).split(".").map(Number);
  if (major > MIN[0] || (major === MIN[0] && minor >= MIN[1])) return null;
  return `${program} needs Node.js ${MIN_NODE} or later; this is Node.js ${versions.node} (${execPath}). Install Node.js ${MIN_NODE}+ and run ${program} with it.`;
}

/**
 * @param {string[]} argv
 * @returns {string | null}
 */
function harnessFlag(argv) {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    if (arg === "--harness") return argv[i + 1] ?? null;
    if (arg.startsWith("--harness=")) return arg.slice("--harness=".length);
  }
  return null;
}

async function readAll() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * Prints the fail-closed answer for `tacho hook` that cannot run on this Node; exit code stays 0.
 * @param {string[]} argv
 * @param {string} message
 */
async function refuseHook(argv, message) {
  const { HARNESSES, eventNameOf, refusal } = require("../harnesses/answers.cjs");
  const named = harnessFlag(argv);
  const harness = named !== null && HARNESSES.includes(named) ? named : null;
  let event = null;
  try {
    const payload = JSON.parse(await readAll());
    if (payload && typeof payload === "object" && !Array.isArray(payload)) event = eventNameOf(harness, payload);
  } catch {}
  process.stdout.write(`${JSON.stringify(refusal(event, "unsupported_node", message, harness))}\n`);
  process.exitCode = 0;
}

/**
 * `TACHO_HOOK_PROBE=FILE tacho hook …`: what enroll and status run to prove a written hook command
 * starts. It writes what ran to FILE (never to stdout, which a harness may route elsewhere) and
 * reads no payload, so nothing is recorded.
 * @param {string} path
 * @param {string | null} problem
 * @param {string | undefined} bin
 */
function writeProbe(path, problem, bin) {
  const { writeFileSync } = require("node:fs");
  const report = { ok: problem === null, problem, node: process.versions.node, exec_path: process.execPath, bin };
  writeFileSync(path, `${JSON.stringify(report)}\n`, { flag: "wx", mode: 0o600 });
  process.stdout.write("{}\n");
}

module.exports = { MIN_NODE, nodeProblem, refuseHook, writeProbe };
