// The user's bytes in a harness configuration stay exactly as they were: enroll inserts only its
// own entries (laid out like their neighbours) and reassign takes exactly those out again, so a
// file comes back byte for byte, whatever its indentation, line endings or final newline.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startStub, STUB_TOKEN, type StubServer } from "./support/stub-server.ts";
import { freePort, run, TACHO, tempHome } from "./support/tacho.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests walk parsed JSON
type Json = Record<string, any>;

let stub: StubServer;
let home: ReturnType<typeof tempHome>;
let env: Record<string, string>;
beforeAll(async () => {
  stub = await startStub();
});
afterAll(() => stub.close());
beforeEach(() => {
  home = tempHome();
  env = { ...home.env, CODEX_HOME: join(home.dir, ".codex") };
});
afterEach(() => home.cleanup());

const tacho = (...args: string[]) => run(TACHO, args, { env });
async function enroll(harness: string) {
  const args = ["enroll", "--no-start", "--harness", harness];
  if (!existsSync(join(env.OXAGEN_HOME!, "host.json")))
    args.push("--server", stub.url, "--token", STUB_TOKEN, "--hooks-port", String(await freePort()));
  return tacho(...args);
}
function put(path: string, text: string) {
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, text);
}

const CLAUDE_STYLES: Record<string, string> = {
  "4-space, no final newline": `{\n    "model": "opus",\n    "hooks": {\n        "Stop": [\n            { "hooks": [ { "type": "command", "command": "notify-send done" } ] }\n        ]\n    },\n    "env": { "A": "1" }\n}`,
  "tabs and CRLF": `{\r\n\t"model": "opus",\r\n\t"permissions": {\r\n\t\t"allow": []\r\n\t}\r\n}\r\n`,
  "one line": `{"model":"opus","hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"./check.sh"}]}]}}`,
  "empty object": "{}",
};

describe("Claude Code's settings.json keeps its bytes", () => {
  for (const [style, text] of Object.entries(CLAUDE_STYLES)) {
    it(`${style}: enroll adds only its entries; reassign gives the file back byte for byte`, async () => {
      const path = join(home.env.CLAUDE_CONFIG_DIR!, "settings.json");
      put(path, text);
      const r = await enroll("claude-code");
      expect(r.code, r.stderr).toBe(0);
      const after = readFileSync(path, "utf8");
      const json = JSON.parse(after) as Json;
      expect(Object.keys(json.hooks)).toEqual(expect.arrayContaining(["PreToolUse", "PostToolUse", "SessionEnd"]));
      if (text.includes("\r\n")) expect(after.replaceAll("\r\n", "")).not.toContain("\n");
      expect(after.endsWith("\n")).toBe(text.endsWith("\n"));
      // The user's own lines are all still there, unchanged (a one-line file gains our entries on its line).
      if (text.includes("\n"))
        for (const line of text.split(/\r?\n/).filter((l) => /"(?:model|env|allow|notify-send done)"/.test(l)))
          expect(after).toContain(line);
      expect((await enroll("claude-code")).code).toBe(0);
      expect(readFileSync(path, "utf8")).toBe(after);
      const rm = await tacho("reassign", "--harness", "none");
      expect(rm.code, rm.stderr).toBe(0);
      expect(readFileSync(path, "utf8")).toBe(text);
    });
  }

  it("a hook event written as an object instead of a list is refused, not replaced: the user's hook stays", async () => {
    const path = join(home.env.CLAUDE_CONFIG_DIR!, "settings.json");
    const text = `{\n  "hooks": {\n    "Stop": { "hooks": [ { "type": "command", "command": "notify-send done" } ] }\n  }\n}\n`;
    put(path, text);
    const r = await enroll("claude-code");
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${path}: hooks.Stop is an object, not a list of matcher groups`);
    expect(r.stderr).toContain('"Stop": [ { "hooks": [ ... ] } ]');
    expect(readFileSync(path, "utf8")).toBe(text);
    expect(existsSync(join(env.OXAGEN_HOME!, "host.json"))).toBe(false);
  });
});

describe("Codex's hooks.json and Cursor's hooks.json keep their bytes", () => {
  it("Codex: a 4-space hooks.json without a final newline comes back byte for byte", async () => {
    const path = join(env.CODEX_HOME!, "hooks.json");
    const text = `{\n    "hooks": {\n        "PreToolUse": [\n            {\n                "matcher": "Bash",\n                "hooks": [\n                    { "type": "command", "command": "python3 guard.py" }\n                ]\n            }\n        ]\n    }\n}`;
    put(path, text);
    expect((await enroll("codex")).code).toBe(0);
    const json = JSON.parse(readFileSync(path, "utf8")) as Json;
    expect(json.hooks.PreToolUse[0]).toEqual(JSON.parse(text).hooks.PreToolUse[0]);
    expect(json.hooks.Interrupt).toHaveLength(1);
    expect((await tacho("reassign", "--harness", "none")).code).toBe(0);
    expect(readFileSync(path, "utf8")).toBe(text);
  });

  it("Codex: a hook event written as an object is refused, the file untouched", async () => {
    const path = join(env.CODEX_HOME!, "hooks.json");
    const text = `{"hooks": {"Stop": {"hooks": [{"type": "command", "command": "say done"}]}}}`;
    put(path, text);
    const r = await enroll("codex");
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("hooks.Stop is an object, not a list of matcher groups");
    expect(readFileSync(path, "utf8")).toBe(text);
  });

  it("Cursor: a hooks.json without a version gets version 1 first, and keeps the rest of its bytes", async () => {
    const path = join(home.dir, ".cursor", "hooks.json");
    const text = `{\n  "hooks": {\n    "stop": [ { "command": "./notify.sh" } ]\n  }\n}\n`;
    put(path, text);
    expect((await enroll("cursor")).code).toBe(0);
    const after = readFileSync(path, "utf8");
    expect(after.startsWith('{\n  "version": 1,\n  "hooks": {\n')).toBe(true);
    expect(after).toContain('"stop": [ { "command": "./notify.sh" },');
    expect(JSON.parse(after).hooks.stop[0]).toEqual({ command: "./notify.sh" });
  });
});

describe("TOML files keep their bytes", () => {
  it("Codex config.toml without a final newline: enroll + reassign give it back exactly", async () => {
    const path = join(env.CODEX_HOME!, "config.toml");
    const text = `model = "o3"\n\n[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = "command"\ncommand = "say done"`;
    put(path, text);
    expect((await enroll("codex")).code).toBe(0);
    const after = readFileSync(path, "utf8");
    expect(after.startsWith(`${text}\n\n# >>> tacho hooks`)).toBe(true);
    expect(after.endsWith("\n")).toBe(false);
    expect((await enroll("codex")).code).toBe(0);
    expect(readFileSync(path, "utf8")).toBe(after);
    expect((await tacho("reassign", "--harness", "none")).code).toBe(0);
    expect(readFileSync(path, "utf8")).toBe(text);
  });
});

// A hooks block or event list the user left empty is theirs: removing our entries gives it back as
// it was (spacing inside it too), and only the blocks and lists enroll created go.
const EMPTY_HOOKS: Record<string, string> = {
  "empty hooks, one line": `{"hooks":{}}`,
  "empty hooks, pretty, final newline": `{\n  "hooks": {}\n}\n`,
  "empty hooks, pretty, no final newline": `{\n  "hooks": {}\n}`,
  "empty hooks with a space inside, between other keys": `{ "theme": "dark", "hooks": { }, "env": {} }`,
  "empty event list, one line": `{"hooks":{"PreToolUse":[]}}`,
  "empty event list, pretty, final newline": `{\n  "hooks": {\n    "PreToolUse": [ ]\n  }\n}\n`,
  "empty event list, pretty, no final newline": `{\n    "hooks": {\n        "PreToolUse": []\n    }\n}`,
  "empty event list next to a user's hook on an event of ours": `{\n  "hooks": {\n    "PreToolUse": [],\n    "Stop": [ { "hooks": [ { "type": "command", "command": "say done" } ] } ]\n  }\n}\n`,
  "events that are not ours, one empty, one with a hook": `{"hooks":{"PostCompact":[],"Elicitation":[{"hooks":[{"type":"command","command":"./x.sh"}]}]}}`,
};
const FILES: Record<string, { path: () => string; text: (t: string) => string }> = {
  "claude-code": { path: () => join(home.env.CLAUDE_CONFIG_DIR!, "settings.json"), text: (t) => t },
  codex: { path: () => join(env.CODEX_HOME!, "hooks.json"), text: (t) => t },
  stella: { path: () => join(env.STELLA_HOME!, "settings.json"), text: (t) => t },
  // Cursor's events are camelCase, and its file carries version 1.
  cursor: {
    path: () => join(home.dir, ".cursor", "hooks.json"),
    text: (t) => t.replace("{", '{"version": 1,').replaceAll('"PreToolUse"', '"preToolUse"').replaceAll('"Stop"', '"stop"'),
  },
};

describe("empty hooks blocks and event lists come back byte for byte", () => {
  for (const [name, text] of Object.entries(EMPTY_HOOKS)) {
    for (const remove of [
      ["unenroll", "--force"],
      ["reassign", "--harness", "none"],
    ]) {
      it(`${name}: enroll, enroll again, ${remove.join(" ")}`, async () => {
        env.STELLA_HOME = join(home.dir, ".stella");
        for (const file of Object.values(FILES)) put(file.path(), file.text(text));
        const r = await enroll(Object.keys(FILES).join(","));
        expect(r.code, r.stderr).toBe(0);
        const applied = Object.values(FILES).map((f) => readFileSync(f.path(), "utf8"));
        expect(applied.every((a, i) => a !== Object.values(FILES)[i]!.text(text))).toBe(true);
        expect((await enroll(Object.keys(FILES).join(","))).code).toBe(0);
        expect(Object.values(FILES).map((f) => readFileSync(f.path(), "utf8"))).toEqual(applied);
        const rm = await tacho(...remove);
        expect(rm.code, rm.stderr).toBe(0);
        for (const [harness, file] of Object.entries(FILES)) expect(readFileSync(file.path(), "utf8"), harness).toBe(file.text(text));
        // Nothing of what enroll noted is left over for a later enroll to misread.
        expect(existsSync(join(env.OXAGEN_HOME!, "originals.json"))).toBe(false);
      });
    }
  }
});
