import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { bytesToHex } from "../../protocol/index.ts";
import { SERVER_KEY_ID, SERVER_PUBLIC } from "../support/sample-run.ts";

describe("GET /v1/keys", () => {
  it("answers the server public key and its id, from OXAGEN_SIGNING_KEY", async () => {
    const res = await exports.default.fetch("http://x/v1/keys");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      keys: [{ key_id: SERVER_KEY_ID, alg: "ed25519", pub: bytesToHex(SERVER_PUBLIC), use: ["bundle", "policy", "seal"] }],
    });
  });
});
