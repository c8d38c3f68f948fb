// Signing in from a command line (protocol/device.ts): a code asked for, polled, approved or denied
// in the console; what an approval yields enrolls only the key it was asked with, once.
import { env, exports } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { bytesToHex, ErrorAnswer, keyIdFor, newSecretKey, publicKeyOf } from "../../protocol/index.ts";
import { db, schema } from "../../workers/db/client.ts";
import { Browser, signedIn } from "./console-browser.ts";
import { BASE, op, seedWorkspace } from "./support.ts";

let token: string;
let workspaceId: string;
let readToken: string;

const secret = newSecretKey();
const PUB = bytesToHex(publicKeyOf(secret));
let addressSeq = 0;
/** A fresh client address per test: the per-address limits never carry from one test to the next. */
const newAddress = () => `203.0.113.${++addressSeq}`;

function post(path: string, body: unknown, address: string) {
  return exports.default.fetch(`${BASE}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", "cf-connecting-ip": address },
    body: JSON.stringify(body),
  });
}

interface Code {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

async function start(address: string, extra: Record<string, unknown> = {}): Promise<Code> {
  const res = await post(
    "/v1/device/authorize",
    {
      purpose: "enroll",
      public_key: PUB,
      hostname: "build-7",
      user: "ada",
      os: "Linux 6.8 x64",
      harnesses: ["claude-code", "codex"],
      ...extra,
    },
    address,
  );
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as Code;
}

async function poll(code: Code, address: string) {
  const res = await post("/v1/device/token", { device_code: code.device_code }, address);
  const body = (await res.json()) as Record<string, unknown>;
  // Every refusal must read as one to the collector's own schema, or the CLI stops at its first poll.
  if (res.status !== 200) expect(ErrorAnswer.safeParse(body).error).toBeUndefined();
  return { status: res.status, body };
}

/** The console's approval form for a code, and its CSRF token. */
async function devicePage(b: Browser, userCode: string) {
  const { res, html } = await b.page(`/console/device?code=${userCode}`);
  const action = /action="(\/console\/device\/[0-9a-f]{16})\/approve"/.exec(html)?.[1] ?? null;
  return { status: res.status, html, action, csrf: Browser.csrf(html) };
}

async function decide(b: Browser, userCode: string, decision: "approve" | "deny", form: Record<string, string> = {}) {
  const page = await devicePage(b, userCode);
  const id = /action="\/console\/device\/([0-9a-f]{16})\/deny"/.exec(page.html)?.[1];
  expect(id, page.html).toBeDefined();
  return b.fetch(`/console/device/${id}/${decision}`, { form: { csrf: page.csrf, ...form } });
}

beforeAll(async () => {
  ({ token, workspaceId } = await seedWorkspace());
  const minted = await op(token, "/v1/tokens", { json: { name: "viewer", scope: "read" } });
  readToken = ((await minted.json()) as { token: string }).token;
});

describe("device authorization: enroll", () => {
  it("shows the computer to the operator, and an approval yields an enrollment token bound to the key, once", async () => {
    const address = newAddress();
    const code = await start(address);
    expect(code.user_code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    expect(code.verification_uri).toBe("http://oxagen.test/console/device");
    expect(code.verification_uri_complete).toBe(`http://oxagen.test/console/device?code=${code.user_code}`);
    expect(code).toMatchObject({ expires_in: 600, interval: 5 });
    expect(code.device_code).toMatch(/^oxd_[0-9a-f]{16}_[0-9a-f]{48}$/);

    expect(await poll(code, address)).toMatchObject({ status: 400, body: { error: "authorization_pending", interval: 5 } });
    // At once again: sooner than the interval, so slow down, 5 s more from now on (RFC 8628 §3.5).
    expect(await poll(code, address)).toMatchObject({ status: 400, body: { error: "slow_down", interval: 10 } });

    const b = await signedIn(token);
    // Typed in lower case with a space, as a person might.
    const page = await devicePage(b, code.user_code.toLowerCase().replace("-", " "));
    expect(page.status).toBe(200);
    for (const shown of ["build-7", "ada", "Linux 6.8 x64", "claude-code, codex", keyIdFor(publicKeyOf(secret)), address, workspaceId])
      expect(page.html).toContain(shown);
    expect((await decide(b, code.user_code, "approve")).status).toBe(303);

    const granted = await poll(code, address);
    expect(granted.status).toBe(200);
    expect(granted.body).toMatchObject({ purpose: "enroll", workspace: workspaceId });
    const enrollmentToken = granted.body.enrollment_token as string;

    // Used: the next poll gets nothing, and the console says so.
    expect(await poll(code, address)).toMatchObject({ status: 400, body: { error: "invalid_grant" } });
    expect((await devicePage(b, code.user_code)).html).toContain("This code was used");
    expect((await devicePage(b, code.user_code)).action).toBeNull();

    // The token enrolls only the key the code was asked with; another key does not spend it.
    const other = bytesToHex(publicKeyOf(newSecretKey()));
    const enroll = (public_key: string) =>
      post("/v1/enroll", { token: enrollmentToken, public_key, hostname: "build-7", harnesses: ["claude-code"] }, address);
    const stolen = await enroll(other);
    expect(stolen.status).toBe(401);
    expect(((await stolen.json()) as { message: string }).message).toMatch(/bound to another host key/);
    const ok = await enroll(PUB);
    expect(ok.status).toBe(201);
    expect(await ok.json()).toMatchObject({ workspace: workspaceId });
    expect((await enroll(PUB)).status).toBe(401);
  });

  it("a denied code issues nothing", async () => {
    const address = newAddress();
    const code = await start(address);
    const before = (await db(env).select().from(schema.enrollmentTokens).all()).length;
    const b = await signedIn(token);
    expect((await decide(b, code.user_code, "deny")).headers.get("location")).toBe("/console/device?done=denied");
    expect(await poll(code, address)).toMatchObject({ status: 400, body: { error: "access_denied" } });
    expect((await db(env).select().from(schema.enrollmentTokens).all()).length).toBe(before);
    const again = await devicePage(b, code.user_code);
    expect(again.html).toContain("Denied by token");
    expect(again.action).toBeNull();
  });

  it("an expired code can be neither approved nor collected", async () => {
    const address = newAddress();
    const code = await start(address);
    const b = await signedIn(token);
    const page = await devicePage(b, code.user_code);
    // Ten minutes are not waited for: the row's expiry is moved into the past.
    const id = code.device_code.split("_")[1]!;
    await db(env)
      .update(schema.deviceCodes)
      .set({ expiresMs: Date.now() - 1 })
      .where(eq(schema.deviceCodes.id, id));
    const late = await b.fetch(`${page.action}/approve`, { form: { csrf: page.csrf } });
    expect(late.headers.get("location")).toBe("/console/device?done=late");
    expect(await poll(code, address)).toMatchObject({ status: 400, body: { error: "expired_token" } });
    expect((await devicePage(b, code.user_code)).html).toContain("expired");
  });

  it("a read-only operator sees the request but cannot approve it", async () => {
    const address = newAddress();
    const code = await start(address);
    const viewer = await signedIn(readToken);
    const page = await devicePage(viewer, code.user_code);
    expect(page.html).toContain("build-7");
    expect(page.html).toContain("may only read");
    expect(page.action).toBeNull();
    // Posting the form anyway: refused, and the code stays pending.
    const id = code.device_code.split("_")[1]!;
    const forced = await viewer.fetch(`/console/device/${id}/approve`, { form: { csrf: page.csrf } });
    expect(forced.status).toBe(403);
    expect(await poll(code, address)).toMatchObject({ status: 400, body: { error: "authorization_pending" } });
  });

  it("a code asked for one workspace is approved only there, and a decided code is not shown to another workspace", async () => {
    const address = newAddress();
    const code = await start(address, { workspace: "ws_elsewhere" });
    const b = await signedIn(token);
    const page = await devicePage(b, code.user_code);
    expect(page.html).toContain("asks for workspace");
    expect(page.action).toBeNull();
    const id = code.device_code.split("_")[1]!;
    const forced = await b.fetch(`/console/device/${id}/approve`, { form: { csrf: page.csrf } });
    expect(forced.status).toBe(409);
    expect(await poll(code, address)).toMatchObject({ body: { error: "authorization_pending" } });

    const mine = await start(newAddress());
    expect((await decide(b, mine.user_code, "approve")).status).toBe(303);
    const other = await seedWorkspace();
    const stranger = await signedIn(other.token);
    expect((await devicePage(stranger, mine.user_code)).status).toBe(404);
    expect(
      (
        await stranger.fetch(`/console/device/${mine.device_code.split("_")[1]}/deny`, {
          form: { csrf: Browser.csrf((await stranger.page("/console/device")).html) },
        })
      ).status,
    ).toBe(404);
  });

  it("of two polls racing for one approval, exactly one gets the token", async () => {
    const address = newAddress();
    const code = await start(address);
    const b = await signedIn(token);
    await decide(b, code.user_code, "approve");
    const [x, y] = await Promise.all([poll(code, address), poll(code, address)]);
    expect([x.status, y.status].sort()).toEqual([200, 400]);
    expect([x, y].find((p) => p.status === 400)!.body.error).toBe("invalid_grant");
  });

  it("refuses bad input before storing anything", async () => {
    const address = newAddress();
    const identity = `01${"00".repeat(31)}`;
    const small = await post(
      "/v1/device/authorize",
      { purpose: "enroll", public_key: identity, hostname: "x", user: "u", os: "o" },
      address,
    );
    expect(small.status).toBe(400);
    expect(await small.json()).toMatchObject({ error: "bad_public_key" });
    const noKey = await post("/v1/device/authorize", { purpose: "enroll", hostname: "x", user: "u", os: "o" }, address);
    expect(noKey.status).toBe(400);
    const keyToLogin = await post(
      "/v1/device/authorize",
      { purpose: "login", public_key: PUB, hostname: "x", user: "u", os: "o" },
      address,
    );
    expect(keyToLogin.status).toBe(400);
    const badHarness = await post(
      "/v1/device/authorize",
      { purpose: "enroll", public_key: PUB, hostname: "x", user: "u", os: "o", harnesses: ["Bad Name"] },
      address,
    );
    expect(badHarness.status).toBe(400);
    for (const device_code of ["nope", `oxd_${"0".repeat(16)}_${"0".repeat(48)}`, `oxe_${"0".repeat(16)}_${"0".repeat(48)}`])
      expect(await poll({ device_code } as Code, address)).toMatchObject({ status: 400, body: { error: "invalid_grant" } });
    const b = await signedIn(token);
    expect((await devicePage(b, "AEIO-UAEI")).status).toBe(400);
    expect((await devicePage(b, "BCDF-GHJK")).status).toBe(404);
  });

  it("limits codes per address (429 with Retry-After) and polls per address (slow_down)", async () => {
    const address = newAddress();
    for (let i = 0; i < 10; i++) await start(address);
    const over = await post("/v1/device/authorize", { purpose: "login", hostname: "x", user: "u", os: "o" }, address);
    expect(over.status).toBe(429);
    expect(over.headers.get("retry-after")).toBe("60");
    expect(await over.json()).toMatchObject({ error: "quota_exceeded" });
    // Another address is not held back.
    await start(newAddress());

    const pollAddress = newAddress();
    const code = await start(pollAddress);
    const answers = new Set<string>();
    for (let i = 0; i < 61; i++) answers.add((await poll(code, pollAddress)).body.error as string);
    expect(answers).toContain("slow_down");
  });
});

describe("device authorization: login", () => {
  it("an approved login code yields an operator token of the scope the approver chose", async () => {
    const address = newAddress();
    const res = await post("/v1/device/authorize", { purpose: "login", hostname: "laptop", user: "grace", os: "Darwin 24" }, address);
    const code = (await res.json()) as Code;
    const b = await signedIn(token);
    const page = await devicePage(b, code.user_code);
    expect(page.html).toContain("sign in the oxagen command line");
    expect(page.html).toContain('name="scope"');
    await decide(b, code.user_code, "approve", { scope: "admin" });
    const granted = await poll(code, address);
    expect(granted.status).toBe(200);
    expect(granted.body).toMatchObject({ purpose: "login", scope: "admin", workspace: workspaceId });
    const operatorToken = granted.body.operator_token as string;
    expect((await op(operatorToken, "/v1/runs")).status).toBe(200);
    const tokens = (await (await op(token, "/v1/tokens")).json()) as { tokens: { id: string; name: string; scope: string }[] };
    expect(tokens.tokens.find((t) => t.id === granted.body.token_id)).toMatchObject({ name: "oxagen login: grace@laptop", scope: "admin" });
  });
});

describe("signing in on the way to the device page", () => {
  it("comes back to the code after signing in, and only to a console page", async () => {
    const b = new Browser();
    const away = await b.fetch("/console/device?code=BCDF-GHJK");
    expect(away.headers.get("location")).toBe("/console/sign-in?next=%2Fconsole%2Fdevice%3Fcode%3DBCDF-GHJK");
    const { html } = await b.page("/console/sign-in?next=%2Fconsole%2Fdevice%3Fcode%3DBCDF-GHJK");
    expect(html).toContain('name="next" value="/console/device?code=BCDF-GHJK"');
    const res = await b.fetch("/console/sign-in", { form: { csrf: Browser.csrf(html), token, next: "/console/device?code=BCDF-GHJK" } });
    expect(res.headers.get("location")).toBe("/console/device?code=BCDF-GHJK");
    for (const next of ["//evil.example/console", "https://evil.example/", "/console/../x", "/console\\evil"]) {
      const c = new Browser();
      const form = await c.page(`/console/sign-in?next=${encodeURIComponent(next)}`);
      expect(form.html).not.toContain('name="next"');
      const signed = await c.fetch("/console/sign-in", { form: { csrf: Browser.csrf(form.html), token, next } });
      expect(signed.headers.get("location")).toBe("/console");
    }
  });
});
