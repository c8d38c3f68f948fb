/**
 * The Oxagen record format, shared by the Worker, the collector and `oxagen verify`.
 * Pure TypeScript: no `node:*` or `cloudflare:*` imports, so it runs in Node and in workerd.
 * @module
 */
export * from "./assess.ts";
export * from "./bundle.ts";
export * from "./bundle-stream.ts";
export * from "./bytes.ts";
export * from "./chain.ts";
export * from "./coverage.ts";
export * from "./device.ts";
export * from "./ed25519.ts";
export * from "./frames.ts";
export * from "./gaps.ts";
export * from "./hash.ts";
export * from "./ids.ts";
export * from "./json.ts";
export * from "./lock.ts";
export * from "./lock-check.ts";
export * from "./server-keys.ts";
export * from "./verify.ts";

/**
 * The record format's version: of frames (the hash header's `oxagen/frame/v1` domain) and locks
 * (`v` in a lock's payload), which `GET /healthz` answers as `protocol`. Not an export bundle's
 * version: a bundle's layout has its own (`oxagen_bundle`, 1 or 2; see `verify-bundle-v1.ts` and
 * `verify-bundle-v2.ts`), and both layouts carry records of this version.
 */
export const RECORD_FORMAT_VERSION = 1;
export * from "./writer.ts";
export * from "./api.ts";
export * from "./auth.ts";
export * from "./policy.ts";
export * from "./redact.ts";
export * from "./usd.ts";
export * from "./tools.ts";
export * from "./uploads.ts";
export * from "./words.ts";
