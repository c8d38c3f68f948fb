// `tacho hook`: the command a harness runs on every step, so it must start near `node -e 0`.
// Plain JS with only node:fs, node:net and node:path (node:os only without $HOME); no protocol/,
// zod, node:http, fetch or process.stdout (a stream costs a few ms to set up). The slower offline path (TS) loads only when the recorder is unreachable.
// Whatever happens it prints exactly one JSON document and leaves the exit code 0.
// Builtins come through process.getBuiltinModule: an ESM `import` of each costs a few ms at start.
const { readFileSync, readSync, writeSync } = process.getBuiltinModule("node:fs");
const { connect } = process.getBuiltinModule("node:net");
const { join } = process.getBuiltinModule("node:path");
const { AGENT_NAME, HARNESSES, RESERVED_AGENT_NAMES, eventNameOf, refusal } = require("../../harnesses/answers.cjs");
const { atSocket, untrustedDir } = require("../../lib/channel.cjs");

const HARD_CAP_BYTES = 64 * 1024 * 1024;
/** A payload up to this many bytes (of stdin) travels whole; a larger one has each value over 1 MiB cut to its digest (oversize.ts). */
const MAX_WHOLE_PAYLOAD_BYTES = 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 1500;

/** @typedef {import("../../harnesses/answers.cjs").HookAnswer} HookAnswer */
/** @typedef {{ agent: string | null; harness: string | null; problem: string | null }} Flags */
/** @typedef {{ harness: string | null; event: string | null; down: boolean }} Seen */
/** @typedef {{ answer: HookAnswer; none?: undefined } | { answer?: undefined; none: string }} Reply */

/** @returns {string} */
function stateDir() {
  if (process.env.OXAGEN_HOME) return process.env.OXAGEN_HOME;
  // os.homedir() is $HOME when it is set; node:os costs a millisecond to load.
  const home = process.env.HOME || process.getBuiltinModule("node:os").homedir();
  return join(home, ".config", "oxagen", "tacho");
}

/**
 * @param {string[]} argv
 * @returns {Flags}
 */
function parseFlags(argv) {
  /** @type {Flags} */
  const flags = { agent: null, harness: null, problem: null };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    const eq = arg.indexOf("=");
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    if (name !== "--agent" && name !== "--harness") {
      flags.problem = `unknown argument ${JSON.stringify(arg)}; usage: tacho hook --agent NAME | --harness ${HARNESSES.join("|")}`;
      continue;
    }
    const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined) flags.problem = `${name} needs a value`;
    else if (name === "--agent") flags.agent = value;
    else flags.harness = value;
  }
  if (!flags.problem && (flags.agent === null) === (flags.harness === null)) {
    flags.problem = "name exactly one of --agent NAME or --harness HARNESS";
  }
  return flags;
}

/**
 * @param {Flags} flags
 * @returns {[string, string] | null}
 */
function identityProblem(flags) {
  if (flags.problem) return ["usage", flags.problem];
  if (flags.agent !== null) {
    if (!AGENT_NAME.test(flags.agent))
      return ["bad_agent_name", `agent name ${JSON.stringify(flags.agent)} must match ^[a-z0-9][a-z0-9._-]{0,63}$`];
    if (RESERVED_AGENT_NAMES.includes(flags.agent)) {
      return [
        "reserved_agent_name",
        `agent name "${flags.agent}" is a built-in harness or runtime name; choose another name for a custom agent`,
      ];
    }
  } else if (!HARNESSES.includes(flags.harness ?? "")) {
    return ["unknown_harness", `unknown harness ${JSON.stringify(flags.harness)}; expected one of ${HARNESSES.join(", ")}`];
  }
  return null;
}

/** @returns {Promise<{ bytes: Buffer; total: number }>} */
async function readStdin() {
  /** @type {Buffer[]} */
  const chunks = [];
  let total = 0;
  /** @param {Buffer} chunk */
  const take = (chunk) => {
    total += chunk.length;
    if (total <= HARD_CAP_BYTES) chunks.push(chunk);
  };
  const buf = Buffer.allocUnsafe(64 * 1024);
  for (;;) {
    let n;
    try {
      n = readSync(0, buf, 0, buf.length, null);
    } catch (err) {
      const code = /** @type {NodeJS.ErrnoException} */ (err).code;
      if (code === "EOF") break;
      // A non-blocking stdin (inherited from a Node parent) cannot be read synchronously.
      if (code !== "EAGAIN") throw err;
      for await (const chunk of process.stdin) take(chunk);
      break;
    }
    if (n === 0) break;
    take(Buffer.from(buf.subarray(0, n)));
  }
  return { bytes: Buffer.concat(chunks), total };
}

/** @returns {{ host: Record<string, unknown>; problem?: undefined } | { host?: undefined; problem: [string, string] }} */
function readHostRaw() {
  let text;
  try {
    text = readFileSync(join(stateDir(), "host.json"), "utf8");
  } catch (e) {
    const err = /** @type {NodeJS.ErrnoException} */ (e);
    if (err.code === "ENOENT") return { problem: ["not_enrolled", "this computer is not enrolled with Oxagen; run tacho enroll first"] };
    return { problem: ["host_unreadable", `cannot read host.json: ${err.code ?? err.message}`] };
  }
  try {
    const host = JSON.parse(text);
    if (Number.isInteger(host?.ports?.hooks) && typeof host.host_id === "string") return { host };
  } catch {}
  return { problem: ["host_damaged", "host.json is damaged; run tacho enroll again"] };
}

/**
 * The recorder's socket, connecting at once so the connection is made while the payload is read.
 * `ask` sends one request line and resolves to its answer, or to why there is none: `down` (no
 * recorder: nothing listens), `timeout`, or `failed` (it answered without an answer). `close` ends
 * it (an unused connection would keep the hook alive).
 * @param {string} dir
 * @returns {{ ask(line: string, timeoutMs: number): Promise<Reply>; close(): void }}
 */
function dial(dir) {
  const socket = atSocket(dir, (path) => connect({ path }));
  let text = "";
  /** @type {Reply | null} */
  let result = null;
  /** @type {(reply: Reply) => void} */
  let deliver = () => {};
  /** @param {Reply} reply */
  const finish = (reply) => {
    if (result) return;
    result = reply;
    socket.destroy();
    deliver(reply);
  };
  socket.setEncoding("utf8");
  socket.on("data", (/** @type {string} */ chunk) => {
    text += chunk;
    const end = text.indexOf("\n");
    if (end >= 0) finish(parseAnswer(text.slice(0, end)));
  });
  socket.on("error", (/** @type {NodeJS.ErrnoException} */ err) =>
    finish({ none: err.code === "ENOENT" || err.code === "ECONNREFUSED" || err.code === "ENOTSOCK" ? "down" : "failed" }),
  );
  socket.on("close", () => finish(parseAnswer(text)));
  return {
    ask(line, timeoutMs) {
      if (result) return Promise.resolve(result);
      // Written before the connection is up, it waits in the socket until it is.
      socket.write(`${line}\n`);
      return new Promise((resolve) => {
        const timer = setTimeout(() => finish({ none: "timeout" }), timeoutMs);
        deliver = (reply) => {
          clearTimeout(timer);
          resolve(reply);
        };
      });
    },
    close: () => finish({ none: "closed" }),
  };
}

// Unique per event (time, pid, 64 random bits) without loading node:crypto, which costs ~5 ms
// at start; the id only makes delivery exactly-once, it is not a secret.
/** @returns {string} */
function eventId() {
  const random = () => Math.floor(Math.random() * 2 ** 32).toString(36);
  return `${Date.now().toString(36)}-${process.pid.toString(36)}-${random()}${random()}`;
}

/**
 * @param {string} line
 * @returns {Reply}
 */
function parseAnswer(line) {
  try {
    const reply = JSON.parse(line);
    if (reply?.v === 1 && reply.answer && typeof reply.answer === "object" && !Array.isArray(reply.answer)) return { answer: reply.answer };
  } catch {}
  return { none: "failed" };
}

/**
 * @param {string[]} argv
 * @param {Seen} seen what the answer must fit, as far as it is known (for the refusal when something throws)
 * @returns {Promise<HookAnswer>}
 */
async function decide(argv, seen) {
  const flags = parseFlags(argv);
  const harness = flags.harness !== null && HARNESSES.includes(flags.harness) ? flags.harness : null;
  seen.harness = harness;
  const identity = identityProblem(flags);
  const dir = stateDir();
  const distrust = untrustedDir(dir);
  const channel = identity || distrust ? null : dial(dir);
  try {
    return await decideOn(flags, harness, identity, seen, { distrust, channel });
  } finally {
    channel?.close();
  }
}

/**
 * @param {Flags} flags
 * @param {string | null} harness
 * @param {[string, string] | null} identity
 * @param {Seen} seen
 * @param {{ distrust: string | null; channel: ReturnType<typeof dial> | null }} recorder the channel, or why there is none
 * @returns {Promise<HookAnswer>}
 */
async function decideOn(flags, harness, identity, seen, { distrust, channel }) {
  const { bytes, total } = await readStdin();

  /** @type {unknown} */
  let event = null;
  if (total <= HARD_CAP_BYTES) {
    try {
      event = JSON.parse(bytes.toString("utf8"));
    } catch {}
  }
  if (event === null || typeof event !== "object" || Array.isArray(event)) {
    const why = total > HARD_CAP_BYTES ? `the payload (${total} bytes) is too large to read` : "stdin is not a JSON object";
    return refusal(null, total > HARD_CAP_BYTES ? "oversize" : "bad_payload", why, harness);
  }
  const payload = /** @type {Record<string, unknown>} */ (event);
  const eventName = eventNameOf(harness, payload);
  seen.event = eventName;
  if (eventName === null) return refusal(null, "bad_payload", "the payload has no hook_event_name", harness);
  if (identity) return refusal(eventName, identity[0], identity[1], harness);

  const { host, problem } = readHostRaw();
  if (problem) return refusal(eventName, problem[0], problem[1], harness);

  /** @type {{ v: 1; id: string; t: number; source: string; harness: string | null; agent: string | null; event: Record<string, unknown>; pid?: number; pid_start?: string }} */
  const request = { v: 1, id: eventId(), t: Date.now(), source: "command", harness, agent: flags.agent, event: payload };
  if (total > MAX_WHOLE_PAYLOAD_BYTES) {
    // Values whose body would be over 1 MiB travel as the digest of their real bytes (docs/collector.md).
    const { cutPayload } = await import("./oversize.ts");
    request.event = cutPayload(harness, payload);
  }
  if (harness === "stella") {
    // Stella sends no session id: the recorder derives it from the Stella process, and ends the session when it exits.
    const { harnessProcess } = await import("../../lib/harness-pid.js");
    const proc = await harnessProcess("stella");
    if (proc) Object.assign(request, { pid: proc.pid, pid_start: proc.start });
  }
  const line = JSON.stringify(request);

  const timeoutMs = Number(process.env.TACHO_HOOK_TIMEOUT_MS) || DEFAULT_TIMEOUT_MS;
  /** @type {Reply} */
  const online = channel ? await channel.ask(line, timeoutMs) : { none: "untrusted" };
  if (online.answer) return online.answer;
  seen.down = online.none === "down";
  const { offlineAnswer } = await offlinePath();
  return offlineAnswer({ host, request, line, eventName, why: online.none, ...(distrust ? { notice: distrust } : {}) });
}

/**
 * Writes the answer to fd 1 as it is; a pipe its parent left non-blocking may take only part of it
 * at once, and the rest then goes through process.stdout. Nobody reading (EPIPE) loses nothing.
 * @param {string} text
 */
function writeOut(text) {
  const bytes = Buffer.from(text);
  let at = 0;
  try {
    while (at < bytes.length) at += writeSync(1, bytes, at);
  } catch (err) {
    if (/** @type {NodeJS.ErrnoException} */ (err).code !== "EPIPE") process.stdout.write(bytes.subarray(at));
  }
}

// The slower TypeScript path, loaded only when the recorder cannot answer (one specifier: the package build rewrites it).
const offlinePath = () => import("./offline.ts");

/**
 * Runs `tacho hook`; prints one JSON answer. Never throws.
 * @param {string[]} argv
 * @returns {Promise<void>}
 */
async function runHook(argv) {
  let answer;
  /** @type {Seen} */
  const seen = { harness: null, event: null, down: false };
  try {
    answer = await decide(argv, seen);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    answer = refusal(seen.event, "internal", `internal error: ${message}`, seen.harness);
  }
  writeOut(`${JSON.stringify(answer)}\n`);
  process.exitCode = 0;
  if (seen.down) {
    // After the answer is out: start the recorder (at most once a minute), so the spool is replayed.
    try {
      const { startRecorderSoon } = await offlinePath();
      startRecorderSoon();
    } catch {}
  }
}

module.exports = { stateDir, runHook };
