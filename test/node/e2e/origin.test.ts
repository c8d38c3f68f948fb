// End to end against the real Worker: a computer given another name for the server (`localhost` for
// the `127.0.0.1` it serves on) signs for an origin the server does not check against.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { filesText, newComputer, stopAll, type Computer } from "../../support/e2e.ts";
import { startWorker, type LocalWorker } from "../../support/worker.ts";

let worker: LocalWorker;
let computer: Computer;
let other: string;
const OWN = `{ "model": "opus" }\n`;
const hostPath = () => join(computer.env.OXAGEN_HOME!, "host.json");
const hostView = async (id: string) => (await (await worker.api(`/v1/hosts/${id}`)).json()) as { status: string };
const enrollWith = (server: string, token: string) =>
  computer.tacho([
    "enroll",
    "--no-start",
    "--server",
    server,
    "--token",
    token,
    "--harness",
    "claude-code",
    "--hooks-port",
    String(computer.port),
    "--gateway-port",
    String(computer.gatewayPort),
    "--json",
  ]);
/** Every path under the computer's HOME and every file's bytes. */
const everything = () => ({
  paths: readdirSync(computer.home, { recursive: true, encoding: "utf8" }).sort(),
  text: filesText(computer.home),
});

beforeAll(async () => {
  worker = await startWorker();
  other = worker.url.replace("127.0.0.1", "localhost");
  computer = await newComputer();
  mkdirSync(computer.env.CLAUDE_CONFIG_DIR!, { recursive: true });
  writeFileSync(join(computer.env.CLAUDE_CONFIG_DIR!, "settings.json"), OWN);
}, 240_000);
afterAll(() => stopAll(undefined, worker));

describe("a --server that is another name for the server", () => {
  let hostId: string;

  it("enroll refuses it naming the URL to use, before the token is sent: nothing is written and the token then enrolls", async () => {
    const { token } = (await (await worker.api("/v1/enrollment-tokens", { method: "POST", body: "{}" })).json()) as { token: string };
    const before = everything();
    const refused = enrollWith(other, token);
    expect(refused.status).toBe(2);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toContain(`the server at ${other} gives its origin as ${worker.url}`);
    expect(refused.stderr).toContain(
      `Run this again with --server ${worker.url} (the token was not used). Nothing was written. [wrong_origin]`,
    );
    expect(everything()).toEqual(before);
    const enrolled = enrollWith(worker.url, token);
    expect(enrolled.status, enrolled.stderr).toBe(0);
    expect(enrolled.stderr).toBe("");
    hostId = (JSON.parse(enrolled.stdout) as { host_id: string }).host_id;
    expect(await hostView(hostId)).toMatchObject({ status: "active" });
  });

  it("unenroll of a computer enrolled with it says the server refuses its requests, never that the host is gone", async () => {
    // As an enrollment from before enroll checked the origin has it (or one the server's new origin left behind).
    writeFileSync(hostPath(), JSON.stringify({ ...JSON.parse(readFileSync(hostPath(), "utf8")), server: other }));
    const refused = computer.tacho(["unenroll"]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(
      `the server was not told (this computer signs its requests for ${other}, the URL it enrolled with, but the server's origin is ${worker.url}, so it refuses them [wrong_origin]); nothing was changed. Pass --force to unenroll here anyway, then remove host ${hostId} in the console`,
    );
    expect(readFileSync(hostPath(), "utf8")).toContain(hostId);

    const forced = computer.tacho(["unenroll", "--force", "--json"]);
    expect(forced.status, forced.stderr).toBe(0);
    const server = (JSON.parse(forced.stdout) as { server: string }).server;
    expect(server).toMatch(/^not told: .*\[wrong_origin\]$/);
    expect(await hostView(hostId)).toMatchObject({ status: "active" });
  });
});
