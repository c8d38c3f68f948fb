// The few node:crypto calls the Worker makes (nodejs_compat is on from compat date 2026-08-04).
// Declared here so workers/ compiles without @types/node; tests compile against @types/node.
declare module "node:crypto" {
  interface Hash {
    update(data: Uint8Array): Hash;
    digest(): Uint8Array;
  }
  export function createHash(algorithm: "sha256"): Hash;
  interface KeyObject {
    readonly type: string;
  }
  export function createPublicKey(input: { key: { kty: "OKP"; crv: "Ed25519"; x: string }; format: "jwk" }): KeyObject;
  export function verify(algorithm: null, data: Uint8Array, key: KeyObject, signature: Uint8Array): boolean;
  export function createPrivateKey(input: { key: { kty: "OKP"; crv: "Ed25519"; x: string; d: string }; format: "jwk" }): KeyObject;
  export function sign(algorithm: null, data: Uint8Array, key: KeyObject): Uint8Array;
}
