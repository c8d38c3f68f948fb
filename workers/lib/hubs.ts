import { bytesToHex, sha256, utf8 } from "../../protocol/index.ts";
import { type Announced, type Audience, newChange, type PushPart } from "../workspace/push-hub.ts";

/**
 * How many push hubs a workspace's connections spread over. Each hub is one object, with its
 * soft limit of 1,000 requests a second (docs/operations.md, "Capacity plan"): a reconnect of the
 * whole fleet at once reaches each hub with a sixteenth of it, and a workspace-wide announcement
 * is sixteen calls, whatever the fleet's size. Changing it moves hosts to other hubs: their
 * recorders reconnect, as after any deploy.
 */
export const PUSH_HUBS = 16;

/** The hub a host's connection lives on: always the same one, by a hash of its id. */
export function hubOf(env: Env, workspaceId: string, hostId: string) {
  const k = Number.parseInt(bytesToHex(sha256(utf8(hostId))).slice(0, 8), 16) % PUSH_HUBS;
  return hub(env, workspaceId, k);
}

function hub(env: Env, workspaceId: string, k: number) {
  return env.HUBS.get(env.HUBS.idFromName(`${workspaceId}#${k}`));
}

/**
 * Announces a change to the workspace's connections: to every hub at once (`all`, with the
 * workspace's part of every host's policy when the caller has it: each hub makes its hosts'
 * policies and carries them), or to the hub of each host named, and merges what they answer. One
 * call per hub, never one per host.
 */
export async function announce(env: Env, workspaceId: string, to: Audience, waitMs: number, part?: PushPart): Promise<Announced> {
  // One change id across the hubs: every recorder acknowledges the same announcement.
  const change = newChange();
  const calls =
    to === "all"
      ? Array.from({ length: PUSH_HUBS }, (_, k) => hub(env, workspaceId, k).announce("all", waitMs, change, part))
      : to.map((t) => hubOf(env, workspaceId, t.host).announce([t], waitMs, change));
  const answers = await Promise.all(calls);
  return {
    change,
    connected: answers.flatMap((a) => a.connected),
    slow: answers.flatMap((a) => a.slow),
  };
}

/** The hosts of the workspace with a push connection open now, from every hub. */
export async function connectedHosts(env: Env, workspaceId: string): Promise<string[]> {
  const all = await Promise.all(Array.from({ length: PUSH_HUBS }, (_, k) => hub(env, workspaceId, k).connectedHosts()));
  return [...new Set(all.flat())];
}
