// The channel between `tacho hook` and its own recorder: a Unix socket in the state directory.
// Plain JS (node: built-ins only) because the hook's fast path loads it; the recorder uses it too,
// so both sides name the socket by the same rule. See docs/collector.md, "Who may answer a hook".
const { statSync } = process.getBuiltinModule("node:fs");
const { join } = process.getBuiltinModule("node:path");

const SOCKET_NAME = "recorder.sock";
// sun_path holds 108 bytes on Linux and 104 on macOS; a longer path is silently cut by libuv,
// which would put the socket in another directory. Longer state paths are reached relatively.
const MAX_SOCKET_PATH = 100;

/**
 * Where the socket is: `{ path }`, or `{ path, cwd }` when the path must be used relative to `cwd`.
 * @param {string} dir
 * @returns {{ path: string; cwd?: string }}
 */
function socketAddress(dir) {
  const path = join(dir, SOCKET_NAME);
  return Buffer.byteLength(path) <= MAX_SOCKET_PATH ? { path } : { path: SOCKET_NAME, cwd: dir };
}

/**
 * Runs `fn(path)` (a synchronous bind or connect) with the socket's address; a long state path is
 * reached by changing into the directory for the call, since both resolve the path at once.
 * @template T
 * @param {string} dir
 * @param {(path: string) => T} fn
 * @returns {T}
 */
function atSocket(dir, fn) {
  const { path, cwd } = socketAddress(dir);
  if (!cwd) return fn(path);
  const before = process.cwd();
  process.chdir(cwd);
  try {
    return fn(path);
  } finally {
    process.chdir(before);
  }
}

/**
 * Why the state directory cannot be trusted to hold this user's recorder, or null: it must be a
 * directory this user owns that nobody else can write (so no one else can put a socket there).
 * A symlinked state directory is judged by the directory it names.
 * @param {string} dir
 * @returns {string | null}
 */
function untrustedDir(dir) {
  let st;
  try {
    st = statSync(dir);
  } catch (err) {
    const e = /** @type {NodeJS.ErrnoException} */ (err);
    return `the state directory cannot be read (${e.code ?? e.message})`;
  }
  if (!st.isDirectory()) return "the state directory is not a directory";
  if (typeof process.getuid === "function" && st.uid !== process.getuid()) return "the state directory belongs to another user";
  if ((st.mode & 0o022) !== 0) return "the state directory is writable by other users";
  return null;
}

module.exports = { SOCKET_NAME, socketAddress, atSocket, untrustedDir };
