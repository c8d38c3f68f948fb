import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

describe("GET /healthz", () => {
  it("answers with the version and the server's own origin, whatever URL it was asked at", async () => {
    const res = await exports.default.fetch("http://x/healthz");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, version: "0.1.0", protocol: 1, origin: "http://oxagen.test" });
  });

  it("answers an unknown route with the error shape", async () => {
    const res = await exports.default.fetch("http://x/nope");
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: "not_found", message: "No such route." });
  });
});
