// `npm start`: local Oxagen under `wrangler dev`. On first run it creates the server signing key
// and the tool-credential key (.dev.vars, never committed), applies the D1 migrations, seeds a
// demo workspace and an operator token, then starts the Worker and prints the API URL, the token,
// and a ready `tacho enroll` line with a fresh one-time enrollment token.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  devArgs,
  devPort,
  enrollLine,
  enrollmentToken,
  ensureDatabase,
  ensureDevSecrets,
  localUrl,
  ROOT,
  waitHealthy,
} from "./dev-setup.ts";

const port = devPort();
const secrets = ensureDevSecrets();
if (secrets.length > 0) process.stdout.write(`Wrote ${secrets.join(" and ")} into .dev.vars (keep it out of git).\n`);
const state = ensureDatabase();
const url = localUrl(port);
// Local tools may call APIs on this machine (docs/operations.md, "Tool upstreams").
const child = spawn(process.execPath, devArgs(port, ["--var", "OXAGEN_TOOLS_ALLOW_LOOPBACK:1"]), { cwd: ROOT, stdio: "inherit" });
const stop = () => child.kill("SIGINT");
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
child.on("exit", (code) => process.exit(code ?? 0));
await waitHealthy(url);
const { version } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string };
const enrollment = await enrollmentToken(url, state.token);
process.stdout.write(
  [
    "",
    "Oxagen is running locally.",
    `  API:        ${url}`,
    `  Console:    ${url}/console   (sign in with the operator token below)`,
    `  Workspace:  ${state.workspace}`,
    `  Token:      ${state.token}   (operator token: the API and the console; not for tacho enroll)`,
    `  Try:        oxagen login --server ${url} --token ${state.token} && oxagen runs`,
    "",
    "Wrap this computer's Claude Code (the enrollment token works once, for 24 hours):",
    `  npm install -g ./dist/oxagen-collector-${version}.tgz      # once; npm run build makes it`,
    `  ${enrollLine(url, enrollment)}`,
    `  or without a token: tacho enroll --server ${url} --harness claude-code   (approve its code at ${url}/console/device)`,
    "",
  ].join("\n"),
);
