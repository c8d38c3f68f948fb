import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { type RecorderLaunch, recorderLaunch } from "../../lib/recorder-process.ts";
import { stateDir } from "../../lib/state.ts";

/** One login service for one state directory (two enrollments on one account get two services). */
export interface ServiceFile {
  kind: "systemd" | "launchd";
  name: string;
  path: string;
  text: string;
}

const DEFAULT_STATE = () => join(homedir(), ".config", "oxagen", "tacho");

/** The service's name: fixed for the default state directory, suffixed by a hash of any other. */
function suffix(): string {
  const dir = stateDir();
  return dir === DEFAULT_STATE() ? "" : `-${createHash("sha256").update(dir).digest("hex").slice(0, 8)}`;
}

/** A word in a systemd unit's command line (systemd.syntax: quotes, backslashes, and `%` specifiers). */
function systemdWord(word: string): string {
  const escaped = word.replaceAll("%", "%%");
  return /^[A-Za-z0-9_@+=:,./-]+$/.test(escaped) ? escaped : `"${escaped.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;
}

/** A systemd user unit that runs the recorder at login and restarts it when it fails. */
export function systemdUnit(launch: RecorderLaunch, configHome = process.env.XDG_CONFIG_HOME || join(homedir(), ".config")): ServiceFile {
  const name = `oxagen-recorder${suffix()}.service`;
  const env = Object.entries(launch.env).map(([k, v]) => `Environment=${systemdWord(`${k}=${v}`)}`);
  const text = [
    "# Written by tacho daemon install; removed by tacho daemon uninstall.",
    "[Unit]",
    `Description=Oxagen recorder (tacho daemon) for ${stateDir()}`,
    "",
    "[Service]",
    "Type=simple",
    `ExecStart=${launch.argv.map(systemdWord).join(" ")}`,
    ...env,
    "Restart=on-failure",
    "RestartSec=5",
    "",
    "[Install]",
    "WantedBy=default.target",
    "",
  ].join("\n");
  return { kind: "systemd", name, path: join(configHome, "systemd", "user", name), text };
}

const xml = (s: string) => s.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");

/** A launchd agent (macOS) that runs the recorder at login and restarts it when it fails. */
export function launchdAgent(launch: RecorderLaunch, home = homedir()): ServiceFile {
  const name = `ai.oxagen.recorder${suffix().replace("-", ".")}`;
  const strings = (items: string[]) => items.map((s) => `    <string>${xml(s)}</string>`);
  const text = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">',
    "<!-- Written by tacho daemon install; removed by tacho daemon uninstall. -->",
    '<plist version="1.0">',
    "<dict>",
    "  <key>Label</key>",
    `  <string>${name}</string>`,
    "  <key>ProgramArguments</key>",
    "  <array>",
    ...strings(launch.argv),
    "  </array>",
    "  <key>EnvironmentVariables</key>",
    "  <dict>",
    ...Object.entries(launch.env).flatMap(([k, v]) => [`    <key>${xml(k)}</key>`, `    <string>${xml(v)}</string>`]),
    "  </dict>",
    "  <key>RunAtLoad</key>",
    "  <true/>",
    "  <key>KeepAlive</key>",
    "  <dict>",
    "    <key>SuccessfulExit</key>",
    "    <false/>",
    "  </dict>",
    "  <key>StandardOutPath</key>",
    `  <string>${xml(launch.log)}</string>`,
    "  <key>StandardErrorPath</key>",
    `  <string>${xml(launch.log)}</string>`,
    "</dict>",
    "</plist>",
    "",
  ].join("\n");
  return { kind: "launchd", name, path: join(home, "Library", "LaunchAgents", `${name}.plist`), text };
}

/** The service file for this platform, or null where tacho has none (not Linux or macOS). */
export function serviceFile(launch: RecorderLaunch, platform = process.platform): ServiceFile | null {
  if (platform === "linux") return systemdUnit(launch);
  if (platform === "darwin") return launchdAgent(launch);
  return null;
}

/** The commands that load and unload a service file. */
export function serviceCommands(file: ServiceFile, uid = process.getuid?.() ?? 0): { load: string[][]; unload: string[][] } {
  if (file.kind === "systemd")
    return {
      load: [
        ["systemctl", "--user", "daemon-reload"],
        ["systemctl", "--user", "enable", "--now", file.name],
      ],
      unload: [
        ["systemctl", "--user", "disable", "--now", file.name],
        ["systemctl", "--user", "daemon-reload"],
      ],
    };
  return {
    load: [["launchctl", "bootstrap", `gui/${uid}`, file.path]],
    unload: [["launchctl", "bootout", `gui/${uid}/${file.name}`]],
  };
}

/** Runs each command in turn; the first failure, in words, or null. */
export function runAll(commands: string[][]): string | null {
  for (const [cmd, ...args] of commands) {
    const r = spawnSync(cmd!, args, { encoding: "utf8" });
    if (r.error || r.status !== 0) return `${[cmd, ...args].join(" ")}: ${r.error?.message ?? (r.stderr.trim() || `exit ${r.status}`)}`;
  }
  return null;
}

/** Unloads and removes this enrollment's login service (tacho daemon uninstall, tacho unenroll); null when none is installed. */
export function removeService(): { file: ServiceFile; failed: string | null } | null {
  const file = serviceFile(recorderLaunch());
  if (!file || !existsSync(file.path)) return null;
  // Unloading a service that is not loaded fails; removing its file is what matters.
  const failed = runAll(serviceCommands(file).unload);
  rmSync(file.path, { force: true });
  return { file, failed };
}
