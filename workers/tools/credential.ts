import { bytesToHex, fromHex, sha256, utf8 } from "../../protocol/index.ts";
import { AppError } from "../errors.ts";

const IV_BYTES = 12;
let cached: { hex: string; key: Promise<CryptoKey>; id: string } | null = null;

/**
 * The key tool credentials are encrypted with: OXAGEN_TOOLS_KEY, 64 hex (an AES-256-GCM key).
 * Its id (the first 8 bytes of SHA-256 of the key, hex) is stored beside each ciphertext, so a
 * credential sealed under another key is told apart from a damaged one.
 */
function toolsKey(env: Pick<Env, "OXAGEN_TOOLS_KEY">): { key: Promise<CryptoKey>; id: string } {
  const hex = env.OXAGEN_TOOLS_KEY;
  if (cached?.hex === hex) return cached;
  let raw: Uint8Array;
  try {
    raw = fromHex(hex ?? "", 32);
  } catch (cause) {
    throw new AppError(500, "server_misconfigured", "The server's OXAGEN_TOOLS_KEY is not 64 hex characters (32 bytes).", { cause });
  }
  const key = crypto.subtle.importKey("raw", raw, "AES-GCM", false, ["encrypt", "decrypt"]);
  cached = { hex, key, id: bytesToHex(sha256(raw).subarray(0, 8)) };
  return cached;
}

// The ciphertext is bound to its workspace and tool: moved to another row, it does not open.
const aad = (workspaceId: string, toolId: string) => utf8(`oxagen/tool-credential/v1\0${workspaceId}\0${toolId}`);

const toBase64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
const fromBase64 = (text: string) => Uint8Array.from(atob(text), (ch) => ch.charCodeAt(0));

/** Encrypts a tool's credential (AES-256-GCM, a fresh 12-byte IV): base64 of IV and ciphertext, and the key's id. */
export async function sealCredential(
  env: Pick<Env, "OXAGEN_TOOLS_KEY">,
  workspaceId: string,
  toolId: string,
  credential: string,
): Promise<{ sealed: string; keyId: string }> {
  const { key, id } = toolsKey(env);
  const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
  const ct = new Uint8Array(
    await crypto.subtle.encrypt({ name: "AES-GCM", iv, additionalData: aad(workspaceId, toolId) }, await key, utf8(credential)),
  );
  const out = new Uint8Array(IV_BYTES + ct.length);
  out.set(iv);
  out.set(ct, IV_BYTES);
  return { sealed: toBase64(out), keyId: id };
}

/** The credential of a tool row, or why it cannot be had (a sentence the operator can act on; never the value). */
export async function openCredential(
  env: Pick<Env, "OXAGEN_TOOLS_KEY">,
  row: { workspaceId: string; id: string; credential: string | null; credentialKeyId: string | null },
): Promise<{ credential: string | null } | { problem: string }> {
  if (row.credential === null) return { credential: null };
  const { key, id } = toolsKey(env);
  if (row.credentialKeyId !== id)
    return { problem: "the tool's credential was encrypted under another OXAGEN_TOOLS_KEY; an operator must enter it again" };
  try {
    const bytes = fromBase64(row.credential);
    const plain = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: bytes.subarray(0, IV_BYTES), additionalData: aad(row.workspaceId, row.id) },
      await key,
      bytes.subarray(IV_BYTES),
    );
    return { credential: new TextDecoder().decode(plain) };
  } catch {
    return { problem: "the tool's stored credential does not decrypt; an operator must enter it again" };
  }
}

/** The header a binding puts its credential in: `placement.header`, `placement.format` with the credential in place of `{credential}`. */
export function credentialHeader(
  placement: { header: string; format: string } | undefined,
  credential: string | null,
): [name: string, value: string] | null {
  if (credential === null) return null;
  const p = placement ?? { header: "authorization", format: "Bearer {credential}" };
  return [p.header, p.format.replaceAll("{credential}", credential)];
}

/** The forms a credential may take in what comes back: as is, URL-encoded, JSON-escaped, and as its header value. */
export function credentialForms(credential: string, headerValue: string | null): string[] {
  const forms = new Set([credential, encodeURIComponent(credential), JSON.stringify(credential).slice(1, -1)]);
  if (headerValue) forms.add(headerValue);
  // Longest first, so a header value holding the credential is removed whole.
  return [...forms].filter((f) => f.length > 0).sort((a, b) => b.length - a.length);
}

/** The text a scrubbed credential is replaced with. */
export const SCRUBBED = "[credential removed by Oxagen]";

/** Removes every form of the credential from a text; answers whether it found one. */
export function scrub(text: string, forms: string[]): { text: string; scrubbed: boolean } {
  let out = text;
  for (const f of forms) if (out.includes(f)) out = out.replaceAll(f, SCRUBBED);
  return { text: out, scrubbed: out !== text };
}
