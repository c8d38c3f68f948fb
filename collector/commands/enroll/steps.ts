import { rmSync } from "node:fs";
import { createServer } from "node:net";
import { ExitError, UsageError } from "../../lib/errors.ts";
import { recorderHealth } from "../../lib/recorder-process.ts";
import { unenrollOnServer } from "../../lib/server.ts";
import { HOST_STATE, type HostConfig, statePath } from "../../lib/state.ts";
import { requireRecorderStopped } from "../../lib/stopped.ts";
import { pendingCount, undelivered } from "../../recorder/undelivered.ts";

/** Where the port scan starts: the ports tacho has always used first. */
export const FIRST_PORTS = { hooks: 47110, gateway: 47111 } as const;

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen({ port, host: "127.0.0.1", exclusive: true }, () => server.close(() => resolve(true)));
  });
}

function portFlag(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 65535)
    throw new UsageError(`${flag} takes a port number (1-65535), not ${JSON.stringify(value)}`);
  return n;
}

/**
 * The enrollment's ports: the flags, else the ones it has, else the first pair from 47110 on that
 * nothing listens on now (another enrollment's running recorder, another program), so two
 * enrollments on one computer each get their own.
 */
export async function choosePorts(
  hooksFlag: string | undefined,
  gatewayFlag: string | undefined,
  existing: HostConfig["ports"] | undefined,
): Promise<HostConfig["ports"]> {
  const hooks = hooksFlag !== undefined ? portFlag(hooksFlag, "--hooks-port") : existing?.hooks;
  const gateway = gatewayFlag !== undefined ? portFlag(gatewayFlag, "--gateway-port") : existing?.gateway;
  if (hooks !== undefined && gateway !== undefined) return { hooks, gateway };
  if (hooks !== undefined) return { hooks, gateway: (await freeFrom(hooks + 1, [hooks])) ?? hooks + 1 };
  for (let h = FIRST_PORTS.hooks; h < FIRST_PORTS.hooks + 400; h += 2) {
    if (h === gateway || !(await canListen(h))) continue;
    if (gateway !== undefined) return { hooks: h, gateway };
    if (await canListen(h + 1)) return { hooks: h, gateway: h + 1 };
  }
  throw new ExitError(1, `no free pair of loopback ports from ${FIRST_PORTS.hooks} on; name them with --hooks-port N --gateway-port M`);
}

async function freeFrom(start: number, not: number[]): Promise<number | null> {
  for (let p = start; p < start + 200 && p <= 65535; p++) if (!not.includes(p) && (await canListen(p))) return p;
  return null;
}

/** A re-enrollment of an enrolled computer with a new token: what it checks first, and what it does once the new host exists. */
export interface Reenroll {
  said: { old_host: string; old_workspace: string; server: string };
  finish(next: HostConfig): Promise<void>;
}

/**
 * One computer, one enrollment: a new token on an enrolled computer re-enrolls this computer (a
 * new host in the token's workspace) and unenrolls the old host on the server, so the console does
 * not end with two computers of one name. The recorder must be stopped (it holds the old key) and
 * nothing recorded may be left undelivered (it is signed by the old key), unless --force.
 */
export function reenrollCheck(program: string, existing: HostConfig, force: boolean): Reenroll {
  const then = "then run this tacho enroll again";
  requireRecorderStopped(program, `${then} (this computer is enrolled already as ${existing.host_id}: the token re-enrolls it)`);
  const pending = pendingCount(undelivered());
  if (pending > 0 && !force)
    throw new ExitError(
      1,
      `${program}: this computer is enrolled already (host ${existing.host_id} in workspace ${existing.workspace}), and ${pending} recorded items are not delivered yet; start the recorder (tacho daemon start) until tacho status shows nothing pending, stop it (tacho daemon stop), ${then}; or pass --force to drop them`,
    );
  return {
    said: { old_host: existing.host_id, old_workspace: existing.workspace, server: "" },
    async finish(next) {
      const told = await unenrollOnServer(existing);
      this.said.server = typeof told === "object" ? `not told (${told.error}): remove host ${existing.host_id} in the console` : told;
      // The old host's chains, keys and policy go with it: the new host begins its own.
      for (const name of HOST_STATE) rmSync(statePath(name), { recursive: true, force: true });
      delete next.previous_keys;
    },
  };
}

/** Why a recorder that started cannot listen on its ports, once it has tried them. */
export async function portTrouble(host: HostConfig): Promise<string[]> {
  let health = await recorderHealth();
  for (let i = 0; i < 50 && health && health.bound === false; i++) {
    await new Promise((r) => setTimeout(r, 100));
    health = await recorderHealth();
  }
  if (!health) return [];
  const out: string[] = [];
  if (health.http !== "listening")
    out.push(
      `the recorder cannot listen on its hook port 127.0.0.1:${host.ports.hooks} (${health.http_error ?? "not listening"}): Claude Code's tool results would not be recorded; choose another with tacho enroll --hooks-port N`,
    );
  if (health.gateway === "unavailable")
    out.push(
      `the recorder cannot listen on its gateway port 127.0.0.1:${host.ports.gateway} (${health.gateway_error ?? "not listening"}): model calls pointed at it fail; choose another with tacho enroll --gateway-port N`,
    );
  return out;
}
