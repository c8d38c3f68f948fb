/**
 * Identifiers: chains, runs, hosts, keys. Every identifier is ASCII so that its bytes are its
 * characters.
 * @module
 */
import { z } from "zod";
import { bytesToHex, utf8 } from "./bytes.ts";
import { taggedHash } from "./hash.ts";

/** A chain id: `run_` + 32 hex for a run, `host_` + a host id for a computer's own chain. */
export const ChainId = z.string().regex(/^(?:run_[0-9a-f]{32}|host_[a-z0-9][a-z0-9_-]{0,63})$/, "not a chain id");
/** A run id (the chain id of a run's chain). */
export const RunId = z.string().regex(/^run_[0-9a-f]{32}$/, "not a run id");
/** A host id, issued by the server at enrollment. */
export const HostId = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, "not a host id");
/** Lowercase hex SHA-256. */
export const Sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, "not a lowercase hex SHA-256");
/** A custom agent or harness label. */
export const AgentName = z.string().regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, "not an agent name");

/** Built-in harness and runtime names; a custom agent may not take one of them. */
export const RESERVED_AGENT_NAMES = [
  "claude-code",
  "codex",
  "cursor",
  "stella",
  "claude-desktop",
  "claude-agent-sdk",
  "custom",
  "proxy",
] as const;

/** The harnesses `tacho enroll` wraps. */
export const HARNESSES = ["claude-code", "codex", "cursor", "stella"] as const;
/** One of {@link HARNESSES}. */
export type Harness = (typeof HARNESSES)[number];

/**
 * The run id for one harness session: `run_` + the first 16 bytes, in hex, of
 * SHA-256("oxagen/run/v1" 0x00 host 0x00 harness 0x00 session). The same session on the same
 * host always lands in the same run, so a replay never opens a second one.
 */
export function runIdFor(hostId: string, harness: string, sessionId: string): string {
  const zero = Uint8Array.of(0);
  const digest = taggedHash("oxagen/run/v1", utf8(hostId), zero, utf8(harness), zero, utf8(sessionId));
  return `run_${bytesToHex(digest.subarray(0, 16))}`;
}

/** The chain id of a computer's own chain. */
export function hostChainId(hostId: string): string {
  return `host_${hostId}`;
}

/** The id of a public key: the first 8 bytes, in hex, of SHA-256("oxagen/key/v1" 0x00 || key). */
export function keyIdFor(publicKey: Uint8Array): string {
  return bytesToHex(taggedHash("oxagen/key/v1", publicKey).subarray(0, 8));
}
