import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../protocol/index.ts";
import { CREDENTIAL_KINDS, CREDENTIAL_PATTERNS, findCredentials, redact, screenCredentials } from "../../protocol/redact.ts";
import { seeded } from "../support/random.ts";

// Fake credentials in each vendor's shape, built from pieces so no scanner mistakes the test for a leak.
const ALNUM = "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0U1v2W3x4Y5z6";
const FAKE = {
  anthropic: `sk-ant-api03-${ALNUM.slice(0, 40)}_xY-${ALNUM.slice(0, 40)}AA`,
  openaiProj: `sk-proj-${ALNUM.slice(0, 30)}_-${ALNUM.slice(0, 30)}`,
  openaiLegacy: `sk-${ALNUM.slice(0, 48)}`,
  openaiSvc: `sk-svcacct-${ALNUM.slice(0, 40)}`,
  akia: "AKIAIOSFODNN7EXAMPLE",
  asia: "ASIAY34FZKBOKMUTVV7A",
  awsSecret: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
  ghp: `ghp_${ALNUM.slice(0, 36)}`,
  gho: `gho_${ALNUM.slice(0, 36)}`,
  ghu: `ghu_${ALNUM.slice(0, 36)}`,
  ghs: `ghs_${ALNUM.slice(0, 36)}`,
  ghr: `ghr_${ALNUM.slice(0, 36)}`,
  githubPat: `github_pat_11ABCDEFG0${ALNUM.slice(0, 12)}_${ALNUM.slice(0, 40)}`,
  slackBot: `xoxb-1234567890-1234567890123-${ALNUM.slice(0, 24)}`,
  slackUser: `xoxp-1234567890-1234567890-1234567890123-${ALNUM.slice(0, 32)}`,
  stripe: `sk_live_${ALNUM.slice(0, 24)}`,
  stripeRestricted: `rk_live_${ALNUM.slice(0, 24)}`,
  google: `AIza${ALNUM.slice(0, 33)}-_`,
  jwt: "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
};
const PEM = [
  "-----BEGIN OPENSSH PRIVATE KEY-----",
  "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
  "QyNTUxOQAAACDfakefakefakefakefakefakefakefakefakefakefakefakeAAAAAA==",
  "-----END OPENSSH PRIVATE KEY-----",
].join("\n");

function kinds(text: string): string[] {
  return findCredentials(text).map((m) => m.kind);
}

function found(text: string): string[] {
  return findCredentials(text).map((m) => text.slice(m.start, m.end));
}

describe("findCredentials: vendor formats", () => {
  const cases: [string, string, string][] = [
    ["Anthropic", `export ANTHROPIC_API_KEY=${FAKE.anthropic}`, "anthropic_api_key"],
    ["OpenAI project key", `client = OpenAI(api_key="${FAKE.openaiProj}")`, "openai_api_key"],
    ["OpenAI legacy key", `key: ${FAKE.openaiLegacy}`, "openai_api_key"],
    ["OpenAI service account key", `${FAKE.openaiSvc}`, "openai_api_key"],
    ["AWS access key id (AKIA)", `aws_access_key_id = ${FAKE.akia}`, "aws_access_key_id"],
    ["AWS access key id (ASIA)", `"AccessKeyId": "${FAKE.asia}"`, "aws_access_key_id"],
    ["GitHub ghp_", `git clone https://${FAKE.ghp}@github.com/o/r`, "github_token"],
    ["GitHub gho_", `token ${FAKE.gho}`, "github_token"],
    ["GitHub ghu_", FAKE.ghu, "github_token"],
    ["GitHub ghs_", FAKE.ghs, "github_token"],
    ["GitHub ghr_", FAKE.ghr, "github_token"],
    ["GitHub fine-grained PAT", `GH=${FAKE.githubPat}`, "github_token"],
    ["Slack bot token", `SLACK=${FAKE.slackBot}`, "slack_token"],
    ["Slack user token", `using ${FAKE.slackUser} now`, "slack_token"],
    ["Stripe live secret key", `stripe.api_key = '${FAKE.stripe}'`, "stripe_secret_key"],
    ["Stripe restricted key", FAKE.stripeRestricted, "stripe_restricted_key"],
    ["Google API key", `https://maps.googleapis.com/maps/api/js?key=${FAKE.google}`, "google_api_key"],
    ["JWT", `curl -H 'X-Session: ${FAKE.jwt}'`, "jwt"],
  ];
  for (const [name, text, kind] of cases) {
    it(`finds ${name} as ${kind}`, () => {
      expect(kinds(text)).toEqual([kind]);
    });
  }

  it("removes the whole vendor token and nothing around it", () => {
    const text = `before ${FAKE.ghp} after`;
    expect(found(text)).toEqual([FAKE.ghp]);
  });

  it("finds an AWS secret access key in env, ini and JSON assignments, keeping the name", () => {
    for (const text of [
      `AWS_SECRET_ACCESS_KEY=${FAKE.awsSecret}`,
      `aws_secret_access_key = ${FAKE.awsSecret}`,
      `{"aws_secret_access_key": "${FAKE.awsSecret}"}`,
      `{\\"AWS_SECRET_ACCESS_KEY\\":\\"${FAKE.awsSecret}\\"}`,
    ]) {
      expect(findCredentials(text).map((m) => [m.kind, text.slice(m.start, m.end)])).toEqual([["aws_secret_access_key", FAKE.awsSecret]]);
    }
  });

  it("finds a PEM private key block, whole, including an RSA or EC one", () => {
    const text = `cat id_ed25519\n${PEM}\n$ next`;
    expect(found(text)).toEqual([PEM]);
    const rsa = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----";
    expect(kinds(rsa)).toEqual(["private_key"]);
    expect(kinds("-----BEGIN EC PRIVATE KEY-----\\nMHcCAQEE\\n-----END EC PRIVATE KEY-----")).toEqual(["private_key"]);
  });

  it("treats a private key block cut off before its END line as running to the end of the text", () => {
    const text = "output:\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC";
    const [m] = findCredentials(text);
    expect(m?.kind).toBe("private_key");
    expect(m?.end).toBe(text.length);
  });

  it("reports a vendor key inside a generic assignment as the vendor's kind, once", () => {
    expect(kinds(`OPENAI_API_KEY=${FAKE.openaiProj}`)).toEqual(["openai_api_key"]);
    expect(kinds(`{"github_token": "${FAKE.ghp}"}`)).toEqual(["github_token"]);
    expect(kinds(`Authorization: Bearer ${FAKE.jwt}`)).toEqual(["jwt"]);
  });
});

describe("findCredentials: passwords in URLs and assignments", () => {
  it("finds the password of scheme://user:pass@host and only the password", () => {
    const text = "DATABASE_URL=postgres://app:s3cr3t-P4ss@db.internal:5432/app";
    expect(findCredentials(text).map((m) => [m.kind, text.slice(m.start, m.end)])).toEqual([["url_password", "s3cr3t-P4ss"]]);
    expect(found("redis://:hunter2hunter2@cache:6379")).toEqual(["hunter2hunter2"]);
    expect(found("amqp://guest:guest@localhost:5672/")).toEqual(["guest"]);
  });

  it("finds env, CLI and query-string assignments", () => {
    expect(found("DB_PASSWORD=correct-horse-battery")).toEqual(["correct-horse-battery"]);
    expect(found("mysql --password=hunter22 -u root")).toEqual(["hunter22"]);
    expect(found("https://api.example.com/v1/items?page=2&token=abc123def456&x=1")).toEqual(["abc123def456"]);
    expect(found("export CLIENT_SECRET=9f8e7d6c5b4a")).toEqual(["9f8e7d6c5b4a"]);
    expect(found("MY_API_KEY=k-1234-5678")).toEqual(["k-1234-5678"]);
    expect(kinds("DB_PASSWORD=x1 APP_SECRET=y2 SESSION_TOKEN=z3 API_KEY=w4")).toEqual(["password", "secret", "token", "api_key"]);
  });

  it("finds JSON, escaped-JSON and quoted code assignments", () => {
    expect(found(`{"password": "hunter2", "user": "bob"}`)).toEqual(["hunter2"]);
    expect(found(`{\\"client_secret\\":\\"abc-def-ghi\\"}`)).toEqual(["abc-def-ghi"]);
    expect(found(`const config = { apiKey: 'live-123456', region: 'eu' };`)).toEqual(["live-123456"]);
    expect(found(`password = "p@ss w0rd!"`)).toEqual(["p@ss w0rd!"]);
    expect(found(`'access_token': 'ya29.a0AfH6SMB'`)).toEqual(["ya29.a0AfH6SMB"]);
  });

  it("finds a long bearer token in an Authorization header", () => {
    expect(kinds("Authorization: Bearer abcdefghijklmnop1234567890")).toEqual(["bearer_token"]);
  });
});

describe("findCredentials: realistic text that holds no credential", () => {
  const clean = [
    "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "run 123e4567-e89b-12d3-a456-426614174000 finished",
    "commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904 (HEAD -> main)",
    "The skeleton task-list uses a disk-usage report and an sk-learn pipeline.",
    "sk-this-is-not-a-key-just-a-long-slug-name",
    "max_tokens=1024, input_tokens: 33, output_tokens: 12",
    `{"max_tokens": 4096, "token_type": "Bearer", "tokens_used": "512"}`,
    "function login(password: string, token: Token): Promise<Session>",
    "const token = getToken(); if (password === undefined) return;",
    "password = input('Password: ')",
    `{"password": "\${DB_PASSWORD}", "secret": "<your-secret-here>", "token": "****"}`,
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell placeholder, not a template
    "DB_PASSWORD=$DB_PASSWORD API_TOKEN=${API_TOKEN}",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell placeholder, not a template
    "postgres://app:${PGPASSWORD}@db/app",
    "https://user@example.com/path and mailto:someone@example.com",
    "Bearer auth is described in RFC 6750.",
    "AKIA is the prefix of an AWS access key id; AKIAshort is too short.",
    "eyJhbGciOi is the start of a JWT header.",
    "PWD=/home/me/src OLDPWD=/tmp",
    "secret: true\npassword_required: false",
    "the tokenizer splits text; passwords must be rotated; secrets live in Vault.",
    "ghp_short and github_pat_ alone are not tokens",
    "AIzaSy is how a Google key starts",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl user@host",
    "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----",
    "[REDACTED:openai_api_key] and password=[REDACTED:password]",
  ];
  for (const text of clean) {
    it(`finds nothing in ${JSON.stringify(text.slice(0, 60))}`, () => {
      expect(findCredentials(text)).toEqual([]);
    });
  }
});

describe("redact", () => {
  it("replaces each credential with [REDACTED:<kind>] and records its kind and the hash of the removed text", () => {
    const text = `export OPENAI_API_KEY=${FAKE.openaiProj}\ngit push https://x:${FAKE.ghp}@github.com/o/r\nDB_PASSWORD=hunter22`;
    const out = redact(text);
    expect(out.text).toBe(
      "export OPENAI_API_KEY=[REDACTED:openai_api_key]\ngit push https://x:[REDACTED:github_token]@github.com/o/r\nDB_PASSWORD=[REDACTED:password]",
    );
    expect(out.redactions).toEqual([
      { kind: "openai_api_key", sha256: sha256Hex(FAKE.openaiProj) },
      { kind: "github_token", sha256: sha256Hex(FAKE.ghp) },
      { kind: "password", sha256: sha256Hex("hunter22") },
    ]);
  });

  it("leaves a text without credentials exactly as it was", () => {
    const text = "npm test -- --reporter=dot # 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    expect(redact(text)).toEqual({ text, redactions: [] });
  });

  it("is idempotent: redacting a redacted text finds nothing more", () => {
    const once = redact(`{"token": "abc123", "key": "${FAKE.stripe}"}\n${PEM}`);
    expect(once.redactions.map((r) => r.kind)).toEqual(["token", "stripe_secret_key", "private_key"]);
    expect(redact(once.text)).toEqual({ text: once.text, redactions: [] });
  });

  it("keeps the JSON around a redacted value parseable", () => {
    const body = JSON.stringify({
      tool_input: { command: `curl -H "Authorization: Bearer ${FAKE.jwt}" https://api` },
      password: "pw-12345",
    });
    const out = redact(body);
    expect(() => JSON.parse(out.text)).not.toThrow();
    expect(out.redactions.map((r) => r.kind)).toEqual(["jwt", "password"]);
  });

  it("handles a large text in one pass", () => {
    const line = "INFO request handled in 12ms for user 123e4567-e89b-12d3-a456-426614174000\n";
    const text = `${line.repeat(12_000)}AWS_SECRET_ACCESS_KEY=${FAKE.awsSecret}\n${"x".repeat(200_000)}`;
    const out = redact(text);
    expect(out.redactions).toEqual([{ kind: "aws_secret_access_key", sha256: sha256Hex(FAKE.awsSecret) }]);
  });

  it("names every kind in snake_case", () => {
    for (const kind of CREDENTIAL_KINDS) expect(kind).toMatch(/^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$/);
  });

  it("never cuts a character in half, and leaves a call in code alone", () => {
    expect(() => redact("token=😀(")).not.toThrow();
    expect(() => redact(`token=${"a".repeat(1023)}😀`)).not.toThrow();
    expect(redact("token=self.getToken()").text).toBe("token=self.getToken()");
    expect(redact("PASSWORD=hunter2hunter2").redactions).toHaveLength(1);
  });
});

describe("findCredentials: work", () => {
  // Hostile bodies: each is dense with candidate credentials, so any step that compares a candidate
  // with every credential already found grows with the square of the size.
  const HOSTILE = ['token="', "bearer aaaaaaaaaaaaaaaaaaaa ", 'api_key="', "eyJaaaaa.", "token=", "x://a:b@"];
  const MIB = 1024 * 1024;

  for (const unit of HOSTILE) {
    it(`takes at most one step per character on 1 MiB of ${JSON.stringify(unit)} repeated`, () => {
      const text = unit.repeat(Math.ceil(MIB / unit.length)).slice(0, MIB);
      const work = { steps: 0 };
      findCredentials(text, work);
      expect(work.steps).toBeLessThanOrEqual(text.length);
    });
  }

  it("counts its steps in proportion to the size: twice the text, at most twice the steps (+1 %)", () => {
    const steps = (n: number) => {
      const work = { steps: 0 };
      findCredentials('token="'.repeat(n), work);
      return work.steps;
    };
    expect(steps(40_000)).toBeLessThanOrEqual(2.02 * steps(20_000));
  });
});

describe("the detectors' keyword checks", () => {
  it("skip no text a detector matches: the same case folding as the detector (ſ folds to s, K to k under `iu`)", () => {
    const texts = [
      'ſecret="hunter2-value"',
      "DB_PASSWORD=sup3rs3cret",
      "ACCESS_TOKEN=abc123def456",
      'my_api_key: "abcdef123456"',
      "Authorization: Bearer abcdefghijklmnop1234",
      "https://user:p4ssw0rd@db.example.com",
      `aws_secret_access_key = "${"a".repeat(40)}"`,
    ];
    for (const text of texts) {
      const found = findCredentials(text);
      expect(found.length, text).toBe(1);
      // Each detector's own expression, run with no keyword check, finds the same span.
      const span = text.slice(found[0]!.start, found[0]!.end);
      expect(
        CREDENTIAL_PATTERNS.some((re) => [...text.matchAll(new RegExp(re.source, re.flags))].some((m) => m[0].includes(span))),
        text,
      ).toBe(true);
    }
  });
});

describe("screenCredentials: one keyword check for many parts of a text", () => {
  const SAMPLES = [
    ...Object.values(FAKE),
    PEM,
    'ſecret="hunter2-value"',
    "DB_PASSWORD=sup3rs3cret",
    'my_api_key: "abcdef123456"',
    "Authorization: Bearer abcdefghijklmnop1234",
    "https://user:p4ssw0rd@db.example.com",
    `aws_secret_access_key = "${"a".repeat(40)}"`,
    "max_tokens: 4096, the password field",
  ];
  const FILLER = ["Here is the file. ", "ok\n", "é 日本 ", " = ", '"', "sk", "-", "eyJ", "://", "bearer"];

  it("finds in each part, screened by the whole, exactly what an unscreened scan finds (parts anywhere in the whole)", () => {
    const r = seeded(2026);
    let screened = 0;
    for (let i = 0; i < 2000; i++) {
      const parts: string[] = [];
      for (let j = 0, n = 1 + Math.floor(r() * 5); j < n; j++) {
        let part = "";
        for (let k = 0, m = Math.floor(r() * 4); k < m; k++) part += FILLER[Math.floor(r() * FILLER.length)]!;
        if (r() < 0.5) part += SAMPLES[Math.floor(r() * SAMPLES.length)]!;
        parts.push(part);
      }
      const screen = screenCredentials(parts.join("\u0000"));
      for (const part of parts) {
        const want = findCredentials(part);
        if (!screen) expect(want, part).toEqual([]);
        else expect(findCredentials(part, undefined, screen), part).toEqual(want);
      }
      if (screen) screened++;
    }
    expect(screened).toBeGreaterThan(500);
  });

  it("is null for a text no detector's keyword occurs in, and screens out the detectors whose keyword is absent", () => {
    expect(screenCredentials("Here is the summary you asked for: three files changed.")).toBeNull();
    const screen = screenCredentials(`${FAKE.ghp} and more`);
    expect(screen).not.toBeNull();
    expect(screen!.specific.length + screen!.generic.length).toBeLessThan(CREDENTIAL_PATTERNS.length);
    expect(findCredentials(FAKE.ghp, undefined, screen!).map((m) => m.kind)).toEqual(["github_token"]);
  });
});
