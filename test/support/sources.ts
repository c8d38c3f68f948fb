// An in-process recorder with its second sources, over a temp journal: no daemon, no network.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bytesToHex, type Frame } from "../../protocol/index.ts";
import { Journal } from "../../collector/recorder/journal/index.ts";
import type { HookRequest } from "../../collector/recorder/request.ts";
import { Recorder } from "../../collector/recorder/recorder.ts";
import { Sources } from "../../collector/recorder/sources/index.ts";
import type { HostConfig } from "../../collector/lib/state.ts";
import { HOST_PUBLIC, HOST_SECRET, SERVER_KEY_ID, SERVER_PUBLIC } from "./sample-run.ts";

export const HOST_ID = "h-src-1";

export function host(): HostConfig {
  return {
    v: 1,
    host_id: HOST_ID,
    workspace: "ws_test",
    server: "http://127.0.0.1:9",
    server_key: { pub: bytesToHex(SERVER_PUBLIC), key_id: SERVER_KEY_ID },
    secret_key: bytesToHex(HOST_SECRET),
    public_key: bytesToHex(HOST_PUBLIC),
    harnesses: ["claude-code", "codex", "cursor", "stella"],
    ports: { hooks: 9, gateway: 10 },
    enrolled_ms: 0,
  };
}

export interface Rig {
  dir: string;
  recorder: Recorder;
  sources: Sources;
  logs: string[];
  clock: { now: number };
  event(harness: string, event: Record<string, unknown>): Record<string, unknown>;
  frames(chain: string): (Frame & { hash: string })[];
  close(): void;
}

/** A recorder + sources over `dir` (reopened from disk when `dir` is given: a restart). */
export function rig(
  dir = mkdtempSync(join(tmpdir(), "oxagen-src-")),
  opts: { quietMs?: number; worktreeMs?: number; beforeHook?: () => void } = {},
): Rig {
  const journal = new Journal(join(dir, "journal"));
  const logs: string[] = [];
  const clock = { now: Date.now() };
  const statePath = join(dir, "sources.json");
  let sources!: Sources;
  const recorder = new Recorder(journal, host(), null, {
    log: (m) => logs.push(m),
    beforeHook: opts.beforeHook,
    sources: (r) => {
      sources = new Sources(r, {
        load: () => {
          try {
            return readFileSync(statePath, "utf8");
          } catch {
            return null;
          }
        },
        save: (t) => writeFileSync(statePath, t),
        quietMs: opts.quietMs ?? 30_000,
        worktreeMs: opts.worktreeMs ?? 15_000,
        now: () => clock.now,
      });
      return sources;
    },
  });
  let n = 0;
  return {
    dir,
    recorder,
    sources,
    logs,
    clock,
    event: (harness, event) =>
      recorder.handle({
        id: `${Date.now().toString(16)}${(n++).toString(16)}`.padStart(16, "0").slice(-16),
        t: clock.now,
        source: "command",
        harness,
        agent: null,
        event,
      } as HookRequest),
    frames: (chain) => {
      // The gateway's frames are durable by a group commit just after the call: read them once durable.
      journal.flushSync();
      const out: (Frame & { hash: string })[] = [];
      for (const line of readFileSync(join(dir, "journal", `${chain}.jsonl`), "utf8").split("\n")) {
        if (!line) continue;
        const v = JSON.parse(line) as { k: string; frames?: (Frame & { hash: string })[] };
        if (v.k === "ev" || v.k === "snap") out.push(...(v.frames ?? []));
      }
      return out;
    },
    close: () => journal.close(),
  };
}

export function payloadsOf(frames: Frame[], kind?: string): Record<string, unknown>[] {
  return frames.filter((f) => !kind || f.kind === kind).map((f) => JSON.parse(f.payload) as Record<string, unknown>);
}

/** A temp git repo with one commit; returns its path. */
export function gitRepo(): string {
  const dir = mkdtempSync(join(tmpdir(), "oxagen-wt-"));
  const git = (...args: string[]) =>
    execFileSync("git", ["-c", "user.email=t@example.com", "-c", "user.name=T", "-c", "commit.gpgsign=false", ...args], {
      cwd: dir,
      encoding: "utf8",
    });
  git("init", "-q", "-b", "main");
  writeFileSync(join(dir, "a.txt"), "one\ntwo\nthree\n");
  writeFileSync(join(dir, "b.txt"), "keep\n");
  writeFileSync(join(dir, ".gitignore"), "*.log\n");
  git("add", ".");
  git("commit", "-q", "-m", "initial");
  return dir;
}

export function gitIn(dir: string, ...args: string[]): string {
  return execFileSync("git", ["-c", "user.email=t@example.com", "-c", "user.name=T", "-c", "commit.gpgsign=false", ...args], {
    cwd: dir,
    encoding: "utf8",
  });
}
