import { spawn } from "node:child_process";

/** Opens the address in the desktop's browser; false when this machine has none to open it with. */
export function openBrowser(url: string): Promise<boolean> {
  const command =
    process.platform === "darwin"
      ? ["open", url]
      : process.platform === "win32"
        ? ["cmd", "/c", "start", '""', url]
        : process.env.DISPLAY || process.env.WAYLAND_DISPLAY
          ? ["xdg-open", url]
          : null;
  if (!command) return Promise.resolve(false);
  return new Promise((done) => {
    const child = spawn(command[0]!, command.slice(1), { stdio: "ignore", detached: true });
    child.once("error", () => done(false));
    child.once("exit", (code) => done(code === 0));
  });
}
