import { createHash } from "node:crypto";
import { chmodSync, mkdirSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { bytesToHex, defaultPolicy, policyEtag, RESERVED_AGENT_NAMES, HARNESSES, signPolicy, type Policy } from "../../protocol/index.ts";
import { HARNESSES as FAST_HARNESSES, RESERVED_AGENT_NAMES as FAST_RESERVED } from "../../collector/harnesses/answers.cjs";
import { HOST_PUBLIC, HOST_SECRET, SERVER_KEY_ID, SERVER_PUBLIC, SERVER_SECRET } from "../support/sample-run.ts";
import { freePort, run, tempHome, TACHO } from "./support/tacho.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests walk parsed JSON
type Answer = Record<string, any>;

let home: ReturnType<typeof tempHome>;
let state: string;

beforeEach(() => {
  home = tempHome();
  state = home.env.OXAGEN_HOME!;
});
afterEach(() => home.cleanup());

/**
 * host.json (and a signed policy) written directly. Unless `autostart`, a hook that finds the
 * recorder down does not start one (a hook already did, as far as the stamp says), so these tests
 * see the offline path alone.
 */
function enrollDirectly(port: number, policy: Policy | null, autostart = false): void {
  mkdirSync(state, { recursive: true, mode: 0o700 });
  if (!autostart) {
    writeFileSync(join(state, "recorder-autostart"), "");
    utimesSync(join(state, "recorder-autostart"), new Date(Date.now() + 86_400_000), new Date(Date.now() + 86_400_000));
  }
  const host = {
    v: 1,
    host_id: "h-test-1",
    workspace: "ws_test",
    server: "http://127.0.0.1:9",
    server_key: { pub: bytesToHex(SERVER_PUBLIC), key_id: SERVER_KEY_ID },
    secret_key: bytesToHex(HOST_SECRET),
    public_key: bytesToHex(HOST_PUBLIC),
    harnesses: ["claude-code"],
    ports: { hooks: port, gateway: port + 1 },
    enrolled_ms: 0,
  };
  writeFileSync(join(state, "host.json"), JSON.stringify(host), { mode: 0o600 });
  if (policy) {
    const signed = signPolicy(policy, SERVER_SECRET, SERVER_KEY_ID);
    writeFileSync(join(state, "policy.json"), JSON.stringify({ etag: policyEtag(signed), policy: signed, fetched_ms: 0 }));
  }
}

function denyRm(): Policy {
  return {
    ...defaultPolicy("ws_test", 0),
    tools: [{ id: "no-rm", tool: "Bash", command: "rm *", decision: "deny", reason: "destructive commands are not allowed" }],
  };
}

async function hook(args: string[], payload: unknown): Promise<{ code: number | null; answer: Answer; stdout: string }> {
  const input = typeof payload === "string" || Buffer.isBuffer(payload) ? payload : JSON.stringify(payload);
  const r = await run(TACHO, ["hook", ...args], { env: home.env, input });
  const docs = r.stdout.split("\n").filter((l) => l.trim());
  expect(docs).toHaveLength(1);
  return { code: r.code, answer: JSON.parse(docs[0]!) as Answer, stdout: r.stdout };
}

function spoolLines(): Answer[] {
  try {
    return readFileSync(join(state, "spool", "events.jsonl"), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Answer);
  } catch {
    return [];
  }
}

const pre = (command: string) => ({
  session_id: "s1",
  hook_event_name: "PreToolUse",
  tool_name: "Bash",
  tool_input: { command },
  tool_use_id: "call-1",
});

describe("tacho hook refuses what it cannot handle, with one JSON answer and exit 0", () => {
  it("malformed stdin: a refusal every caller of the wrap-an-agent page reads as stop", async () => {
    const { code, answer } = await hook(["--agent", "my-agent"], '{"hook_event_name": "PreToolUse",');
    expect(code).toBe(0);
    expect(answer.hookSpecificOutput.permissionDecision).toBe("deny");
    expect(answer.decision).toBe("block");
    expect(answer.continue).toBe(false);
    expect(answer.error.code).toBe("bad_payload");
  });

  it("empty stdin and a JSON array are refused the same way", async () => {
    for (const input of ["", "[1,2]"]) {
      const { code, answer } = await hook(["--agent", "my-agent"], input);
      expect(code).toBe(0);
      expect(answer.error.code).toBe("bad_payload");
    }
  });

  it("not enrolled: PreToolUse is denied with a clear reason", async () => {
    const { code, answer } = await hook(["--agent", "my-agent"], pre("ls"));
    expect(code).toBe(0);
    expect(answer.hookSpecificOutput).toMatchObject({ hookEventName: "PreToolUse", permissionDecision: "deny" });
    expect(answer.hookSpecificOutput.permissionDecisionReason).toMatch(/not enrolled.*tacho enroll/);
    expect(answer.error.code).toBe("not_enrolled");
  });

  it("not enrolled: UserPromptSubmit is blocked, SessionStart stops, Stop gets no decision", async () => {
    expect(
      (await hook(["--agent", "my-agent"], { session_id: "s", hook_event_name: "UserPromptSubmit", prompt: "hi" })).answer.decision,
    ).toBe("block");
    expect((await hook(["--agent", "my-agent"], { session_id: "s", hook_event_name: "SessionStart" })).answer.continue).toBe(false);
    const stop = (await hook(["--agent", "my-agent"], { session_id: "s", hook_event_name: "Stop" })).answer;
    expect(stop.decision).toBeUndefined();
    expect(stop.systemMessage).toMatch(/not enrolled/);
  });

  it("a reserved agent name is refused even on an enrolled computer", async () => {
    enrollDirectly(await freePort(), denyRm());
    for (const name of RESERVED_AGENT_NAMES) {
      const { code, answer } = await hook(["--agent", name], pre("ls"));
      expect(code).toBe(0);
      expect(answer.error.code).toBe("reserved_agent_name");
      expect(answer.hookSpecificOutput.permissionDecision).toBe("deny");
    }
    expect(spoolLines()).toEqual([]);
  });

  it("an agent name outside ^[a-z0-9][a-z0-9._-]{0,63}$ and a missing --agent are refused", async () => {
    enrollDirectly(await freePort(), denyRm());
    expect((await hook(["--agent", "My Agent"], pre("ls"))).answer.error.code).toBe("bad_agent_name");
    expect((await hook(["--agent", "a".repeat(65)], pre("ls"))).answer.error.code).toBe("bad_agent_name");
    expect((await hook([], pre("ls"))).answer.error.code).toBe("usage");
  });

  it("for Claude Code, a refusal carries only Claude's documented fields", async () => {
    const { answer } = await hook(["--harness", "claude-code"], pre("ls"));
    expect(Object.keys(answer).sort()).toEqual(["hookSpecificOutput", "systemMessage"]);
  });
});

describe("tacho hook with the recorder down decides from the cached signed policy and spools", () => {
  it("a deny clause stops the tool; a call no clause decides gets no decision; both are spooled with their answers and decisions", async () => {
    enrollDirectly(await freePort(), denyRm());
    const denied = await hook(["--agent", "my-agent"], { ...pre("rm -rf /tmp/x"), extra_field: { kept: true } });
    expect(denied.code).toBe(0);
    expect(denied.answer).toEqual({
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        permissionDecision: "deny",
        permissionDecisionReason: "destructive commands are not allowed",
      },
      enforcement_tier: "client_attested",
    });
    // No clause decides `ls` and a new workspace's default gives no decision: the harness's own
    // permission flow decides, as if Oxagen were not there.
    const undecided = await hook(["--agent", "my-agent"], pre("ls -la"));
    expect(undecided.answer).toEqual({ enforcement_tier: "client_attested" });

    const lines = spoolLines();
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ v: 1, source: "command", harness: null, agent: "my-agent", answer: denied.answer });
    expect(lines[0]!.verdict).toMatchObject({ subject: "tool", decision: "deny", mode: "enforce", rule: "no-rm" });
    expect(lines[1]!.verdict).toMatchObject({ subject: "tool", decision: "none", mode: "enforce", rule: "default" });
    expect(lines[0]!.event).toEqual({ ...pre("rm -rf /tmp/x"), extra_field: { kept: true } });
    expect(lines[0]!.id).toMatch(/^[0-9a-z]+-[0-9a-z]+-[0-9a-z]+$/);
    expect(lines[0]!.id).not.toBe(lines[1]!.id);
    expect(typeof lines[0]!.spooled_ms).toBe("number");
  });

  it("allow only for an explicit allow clause; an older policy's explicit default is still honoured; observe mode never decides", async () => {
    const allowLs: Policy = {
      ...denyRm(),
      tools: [...denyRm().tools, { id: "ls-ok", tool: "Bash", command: "ls*", decision: "allow", reason: "listing is fine" }],
    };
    enrollDirectly(await freePort(), allowLs);
    expect((await hook(["--agent", "my-agent"], pre("ls"))).answer.hookSpecificOutput).toMatchObject({ permissionDecision: "allow" });
    expect((await hook(["--agent", "my-agent"], pre("make"))).answer.hookSpecificOutput).toBeUndefined();
    enrollDirectly(await freePort(), { ...denyRm(), default_tool_decision: "ask" });
    expect((await hook(["--agent", "my-agent"], pre("make"))).answer.hookSpecificOutput).toMatchObject({ permissionDecision: "ask" });
    enrollDirectly(await freePort(), { ...denyRm(), mode: "observe" });
    expect((await hook(["--agent", "my-agent"], pre("rm -rf /"))).answer).toEqual({ enforcement_tier: "client_attested" });
    expect(spoolLines().at(-1)!.verdict).toMatchObject({ decision: "deny", mode: "observe", rule: "no-rm" });
  });

  it("a PreToolUse with no usable session_id is refused (the step cannot be attributed) and spooled", async () => {
    enrollDirectly(await freePort(), denyRm());
    for (const session_id of [undefined, "", 42]) {
      const { answer } = await hook(["--agent", "my-agent"], { ...pre("ls"), session_id });
      expect(answer.hookSpecificOutput).toMatchObject({ permissionDecision: "deny" });
      expect(answer.hookSpecificOutput.permissionDecisionReason).toMatch(/no usable session_id/);
    }
    expect(spoolLines().map((l) => l.verdict.rule)).toEqual(["no_session", "no_session", "no_session"]);
  });

  it("a policy that does not verify under the pinned key is not used: the tool call is denied", async () => {
    enrollDirectly(await freePort(), null);
    const forged = signPolicy({ ...defaultPolicy("ws_test", 0) }, HOST_SECRET, SERVER_KEY_ID);
    writeFileSync(join(state, "policy.json"), JSON.stringify({ etag: policyEtag(forged), policy: forged, fetched_ms: 0 }));
    const { answer } = await hook(["--agent", "my-agent"], pre("ls"));
    expect(answer.hookSpecificOutput.permissionDecision).toBe("deny");
    expect(answer.hookSpecificOutput.permissionDecisionReason).toMatch(/no verified policy/);
  });

  it("with no cached policy, PreToolUse fails closed and other events pass", async () => {
    enrollDirectly(await freePort(), null);
    expect((await hook(["--agent", "my-agent"], pre("ls"))).answer.hookSpecificOutput.permissionDecision).toBe("deny");
    expect((await hook(["--agent", "my-agent"], { session_id: "s1", hook_event_name: "SessionStart" })).answer).toEqual({
      enforcement_tier: "client_attested",
    });
    expect(spoolLines()).toHaveLength(2);
  });

  it("a suspended computer is denied tools and its prompts are blocked", async () => {
    enrollDirectly(await freePort(), { ...defaultPolicy("ws_test", 0), suspended_hosts: ["h-test-1"] });
    expect((await hook(["--agent", "my-agent"], pre("ls"))).answer.hookSpecificOutput.permissionDecision).toBe("deny");
    expect(
      (await hook(["--agent", "my-agent"], { session_id: "s1", hook_event_name: "UserPromptSubmit", prompt: "x" })).answer.decision,
    ).toBe("block");
  });

  it("an unknown event is answered {} (with the tier) and kept in the spool", async () => {
    enrollDirectly(await freePort(), denyRm());
    const { code, answer } = await hook(["--agent", "my-agent"], { session_id: "s1", hook_event_name: "SomethingNew", detail: 1 });
    expect(code).toBe(0);
    expect(answer).toEqual({ enforcement_tier: "client_attested" });
    expect(spoolLines()[0]!.event).toEqual({ session_id: "s1", hook_event_name: "SomethingNew", detail: 1 });
  });

  it("a payload over 1 MiB: the tool call is denied; the spooled step names the real size and SHA-256 of what it cut", async () => {
    enrollDirectly(await freePort(), denyRm());
    const input = { command: "ls", padding: "x".repeat(1_100_000) };
    const big = { ...pre("ls"), tool_input: input };
    const { code, answer } = await hook(["--agent", "my-agent"], big);
    expect(code).toBe(0);
    expect(answer.hookSpecificOutput.permissionDecision).toBe("deny");
    expect(answer.hookSpecificOutput.permissionDecisionReason).toMatch(/1 MiB/);
    const [line] = spoolLines();
    const bytes = JSON.stringify(input);
    expect(line!.event).toEqual({
      session_id: "s1",
      hook_event_name: "PreToolUse",
      tool_name: "Bash",
      tool_use_id: "call-1",
      tool_input: { command: "ls", $oxagen_oversize: { sha256: createHash("sha256").update(bytes).digest("hex"), size: bytes.length } },
    });
    expect(line!.verdict).toMatchObject({ decision: "deny", rule: "oversize" });
  });

  it("the 10,001st spooled event is not kept but counted in spool/dropped", async () => {
    enrollDirectly(await freePort(), denyRm());
    mkdirSync(join(state, "spool"), { recursive: true });
    const filler = `${JSON.stringify({ v: 1, id: "0000000000000000", t: 0, source: "command", harness: null, agent: "my-agent", event: {} })}\n`;
    writeFileSync(join(state, "spool", "events.jsonl"), filler.repeat(9_999));
    const first = await hook(["--agent", "my-agent"], pre("ls"));
    expect(first.answer.systemMessage).toBeUndefined();
    expect(spoolLines()).toHaveLength(10_000);
    const second = await hook(["--agent", "my-agent"], pre("rm -rf /"));
    expect(second.answer.hookSpecificOutput.permissionDecision).toBe("deny");
    expect(second.answer.systemMessage).toMatch(/spool is full/);
    expect(spoolLines()).toHaveLength(10_000);
    expect(readFileSync(join(state, "spool", "dropped"), "utf8").trim()).toBe("1");
    await hook(["--agent", "my-agent"], pre("ls"));
    expect(readFileSync(join(state, "spool", "dropped"), "utf8").trim()).toBe("2");
  });
});

describe("only the recorder answers a hook", () => {
  let stranger: Server;
  let received: string[];
  let port: number;

  beforeEach(async () => {
    received = [];
    // Something else on the hook port that answers every request with an allow.
    stranger = createServer((socket) => {
      let text = "";
      socket.setEncoding("utf8").on("data", (d: string) => {
        text += d;
        if (!text.includes("\n")) return;
        received.push(text.slice(0, text.indexOf("\n")));
        socket.end(
          `${JSON.stringify({ v: 1, answer: { hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "allow" } } })}\n`,
        );
      });
    });
    await new Promise<void>((r) => stranger.listen(0, "127.0.0.1", r));
    port = (stranger.address() as { port: number }).port;
  });
  afterEach(() => new Promise<void>((r) => stranger.close(() => r())));

  it("with a stranger on the hook port, the hook neither sends it the payload nor takes its answer: it decides from the cached policy and spools", async () => {
    enrollDirectly(port, denyRm());
    const { code, answer } = await hook(["--harness", "claude-code"], pre("rm -rf /"));
    expect(code).toBe(0);
    expect(answer.hookSpecificOutput).toMatchObject({
      permissionDecision: "deny",
      permissionDecisionReason: "destructive commands are not allowed",
    });
    expect(answer.enforcement_tier).toBe("client_attested");
    expect(received).toEqual([]);
    expect(spoolLines()).toHaveLength(1);
  });

  it("does not trust a recorder socket in a state directory other users may write", async () => {
    enrollDirectly(port, denyRm());
    chmodSync(state, 0o777);
    const { answer } = await hook(["--agent", "my-agent"], pre("ls"));
    expect(answer.systemMessage).toMatch(/writable by other users/);
    chmodSync(state, 0o700);
  });
});

describe("the hook fast path stays small", () => {
  it("loads only node builtins (no node:http) and its own plain-JS files, without ESM imports", () => {
    const answers = ["answers.cjs", ...HARNESSES.map((h) => `${h}/answer.cjs`)].map((f) => `harnesses/${f}`);
    for (const file of ["commands/hook/client.cjs", "lib/channel.cjs", ...answers]) {
      const source = readFileSync(join(import.meta.dirname, "../../collector", file), "utf8");
      const text = source.replace(/^\s*\/\/.*$/gm, "");
      expect(text).not.toMatch(/^import /m);
      const builtins = [...text.matchAll(/getBuiltinModule\("([^"]+)"\)/g)].map((m) => m[1]!);
      for (const spec of builtins) expect(spec).toMatch(/^node:(?:crypto|fs|net|os|path)$/);
      const required = [...text.matchAll(/require\("([^"]+)"\)/g)].map((m) => m[1]!);
      for (const spec of required) expect(spec).toMatch(/^(?:\.\/|(?:\.\.\/)+(?:harnesses\/|lib\/|claude-code\/)?)[a-z/-]+\.cjs$/);
      expect(text).not.toMatch(/\bfetch\(|node:http/);
    }
  });

  it("mirrors protocol's reserved names and harnesses", () => {
    expect([...FAST_RESERVED]).toEqual([...RESERVED_AGENT_NAMES]);
    expect([...FAST_HARNESSES]).toEqual([...HARNESSES]);
  });
});
