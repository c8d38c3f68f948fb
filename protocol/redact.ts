/**
 * Credential detectors and redaction, shared by the recorder (before it hashes any body) and the
 * server (before it stores one). Pure: no `node:*` or `cloudflare:*` imports.
 *
 * Each detector names a kind (snake_case). Vendor formats (API keys, tokens, JWTs, PEM private
 * keys) win over the generic assignment detectors (`password=…`, `"token": "…"`), so a key in an
 * assignment is reported as the vendor's kind. Only the credential itself is removed: the name of
 * an assignment, the scheme, user and host of a URL stay readable.
 * @module
 */
import { sha256Hex } from "./hash.ts";

/** Where a credential sits in a text: `[start, end)` in UTF-16 code units. */
export interface CredentialMatch {
  kind: string;
  start: number;
  end: number;
}

/** One removed credential: its kind and the hex SHA-256 of the removed text. */
export interface RemovedCredential {
  kind: string;
  sha256: string;
}

/** A redacted text and what was removed from it, in text order. */
export interface RedactResult {
  text: string;
  redactions: RemovedCredential[];
}

interface Detector {
  kind: string;
  /** Global with indices (`gd`); capture group `secret` is the credential when present, else the whole match. */
  re: RegExp;
  /** Extra check on the credential text; false drops the match. */
  accept?: (secret: string) => boolean;
  /**
   * What every match contains (a literal, or a plain expression with the detector's own flags, so
   * case folding is the same): a text without it is not scanned by `re`. Cheap next to `re`. No
   * anchor, lookaround or `g` flag: found in a part of a text, it is found in the whole ({@link screenCredentials}).
   */
  hint: string | RegExp;
}

// A token does not start or end in the middle of another word.
const B = "(?<![A-Za-z0-9_-])";
const E = "(?![A-Za-z0-9_-])";

/** Vendor formats: matched anywhere. */
const SPECIFIC: Detector[] = [
  {
    kind: "private_key",
    re: /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----|$)/dg,
    hint: "PRIVATE KEY",
  },
  { kind: "anthropic_api_key", re: new RegExp(`${B}sk-ant-[A-Za-z0-9_-]{20,}`, "dg"), hint: "sk-ant-" },
  { kind: "openai_api_key", re: new RegExp(`${B}sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}`, "dg"), hint: "sk-" },
  { kind: "openai_api_key", re: new RegExp(`${B}sk-[A-Za-z0-9]{20,}${E}`, "dg"), accept: mixedCharacters, hint: "sk-" },
  { kind: "aws_access_key_id", re: /(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])/dg, hint: /AKIA|ASIA/ },
  {
    kind: "aws_secret_access_key",
    re: /aws_?secret_?(?:access_?)?key\\?["']?\s*[:=]\s*\\?["']?(?<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])/dgi,
    hint: /aws_?secret/i,
  },
  { kind: "github_token", re: new RegExp(`${B}(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}${E}`, "dg"), hint: /gh[pousr]_/ },
  { kind: "github_token", re: new RegExp(`${B}github_pat_[A-Za-z0-9_]{22,255}${E}`, "dg"), hint: "github_pat_" },
  { kind: "slack_token", re: new RegExp(`${B}xox[abpr]-[A-Za-z0-9-]{10,}`, "dg"), hint: "xox" },
  { kind: "stripe_secret_key", re: new RegExp(`${B}sk_live_[A-Za-z0-9]{16,}${E}`, "dg"), hint: "sk_live_" },
  { kind: "stripe_restricted_key", re: new RegExp(`${B}rk_live_[A-Za-z0-9]{16,}${E}`, "dg"), hint: "rk_live_" },
  { kind: "google_api_key", re: new RegExp(`${B}AIza[A-Za-z0-9_-]{35}${E}`, "dg"), hint: "AIza" },
  { kind: "jwt", re: new RegExp(`${B}eyJ[A-Za-z0-9_-]{5,}\\.eyJ[A-Za-z0-9_-]{5,}\\.[A-Za-z0-9_-]{8,}${E}`, "dg"), hint: "eyJ" },
];

// The name ends with the keyword (`DB_PASSWORD`, `client_secret`, `GITHUB_TOKEN`) but not `max_tokens`.
const NAME = (words: string) => `(?<![A-Za-z0-9_.-])(?:[A-Za-z0-9_.-]*[_.-])?(?:${words})`;
const QUOTED_ASSIGN = `\\\\?["']?\\s*[:=]`;
const QUOTED_VALUE = `\\\\?(?<q>["'])(?<secret>[^"'\\\\\\r\\n]{1,1024})\\\\?\\k<q>`;
// Unquoted only in env/CLI/query form (`KEY=value`, `--password=value`, `?token=value`): no spaces
// around `=`, which keeps `token = getToken()` and `password: string` in code out.
const BARE_VALUE = `(?<secret>\\$\\{[A-Za-z_][A-Za-z0-9_]*\\}|[^\\s"'\`;&,()<>\\[\\]{}]{1,1024})(?![(\\w.-])`;

function assignment(kind: string, words: string): Detector[] {
  const quoted = `(?:${words})${QUOTED_ASSIGN}`;
  const bare = `(?:${words})=`;
  // Each hint is the keyword and what must follow it, with the detector's flags (`iu`: the same
  // Unicode case folding): `max_tokens` in every model request is not scanned for a token.
  return [
    {
      kind,
      re: new RegExp(`${NAME(words)}${QUOTED_ASSIGN}\\s*${QUOTED_VALUE}`, "dgiu"),
      accept: notPlaceholder,
      hint: new RegExp(quoted, "iu"),
    },
    { kind, re: new RegExp(`${NAME(words)}=${BARE_VALUE}`, "dgiu"), accept: notPlaceholder, hint: new RegExp(bare, "iu") },
  ];
}

/** Generic forms: a password in a URL and secret-looking assignments. */
const GENERIC: Detector[] = [
  {
    kind: "url_password",
    re: /(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{1,31}:\/\/[^\s/:@"'<>]{0,256}:(?<secret>[^\s/@"'<>]{1,256})@/dgu,
    accept: notPlaceholder,
    hint: "://",
  },
  { kind: "bearer_token", re: /(?<![A-Za-z])bearer\s+(?<secret>[A-Za-z0-9._~+/-]{16,}=*)/dgi, accept: notPlaceholder, hint: /bearer/i },
  ...assignment("password", "password|passwd|passphrase"),
  ...assignment("secret", "secret"),
  ...assignment("token", "token"),
  ...assignment("api_key", "api[_-]?key|apikey"),
];

const PLACEHOLDER =
  /^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\{\{.*\}\}|<[^>]*>|\*+|x+|X+|\.+|true|false|null|none|nil|undefined|\[REDACTED(?::[a-z0-9_]+)?\]|REDACTED)$/i;

function notPlaceholder(secret: string): boolean {
  return !PLACEHOLDER.test(secret);
}

// A bare `sk-` key is letters and digits mixed; `sk-` followed by one word is prose or a slug.
function mixedCharacters(secret: string): boolean {
  const body = secret.slice(3);
  return /[0-9]/.test(body) && /[A-Za-z]/.test(body);
}

const hinted = (d: Detector, text: string) => (typeof d.hint === "string" ? text.includes(d.hint) : d.hint.test(text));

// Merges the detectors' matches into `kept` (sorted by start, never overlapping) and returns the
// result. Earliest first, then longest; a match overlapping one already kept is dropped. One sweep:
// `found` and `kept` are both in start order, so each is passed once.
function run(detectors: readonly Detector[], text: string, kept: CredentialMatch[], work: { steps: number }): CredentialMatch[] {
  const found: CredentialMatch[] = [];
  for (const d of detectors) {
    if (!hinted(d, text)) continue;
    d.re.lastIndex = 0;
    for (const m of text.matchAll(d.re)) {
      const span = m.indices?.groups?.secret ?? m.indices?.[0];
      if (!span || span[1] <= span[0]) continue;
      if (d.accept && !d.accept(text.slice(span[0], span[1]))) continue;
      found.push({ kind: d.kind, start: span[0], end: span[1] });
    }
  }
  found.sort((a, b) => a.start - b.start || b.end - a.end);
  const out: CredentialMatch[] = [];
  let i = 0;
  let lastEnd = -1;
  for (const m of found) {
    work.steps++;
    while (i < kept.length && kept[i]!.end <= m.start) {
      work.steps++;
      out.push(kept[i++]!);
    }
    // kept[i] ends after m starts; the newest match taken here has the largest end of those taken.
    if ((i < kept.length && kept[i]!.start < m.end) || m.start < lastEnd) continue;
    out.push(m);
    lastEnd = m.end;
  }
  while (i < kept.length) out.push(kept[i++]!);
  return out;
}

/**
 * Finds the credentials in a text, sorted by position and never overlapping. Vendor formats are
 * matched first, so `OPENAI_API_KEY=sk-…` reports `openai_api_key`, not `api_key`. The work beyond
 * the detectors' own scans is one step per match found and per match kept; `work.steps`, when
 * given, counts those steps (tests bound it).
 */
export function findCredentials(text: string, work: { steps: number } = { steps: 0 }, screen?: CredentialScreen): CredentialMatch[] {
  return run(screen?.generic ?? GENERIC, text, run(screen?.specific ?? SPECIFIC, text, [], work), work);
}

/** The detectors whose hint occurs in a text (see {@link screenCredentials}); opaque to callers. */
export interface CredentialScreen {
  readonly specific: readonly Detector[];
  readonly generic: readonly Detector[];
}

/**
 * The detectors that can match in any part of `text`, for scanning many texts that all stand inside
 * it: a hint has no anchor or lookaround, so a hint found in a part is found in the whole, and a
 * detector whose hint the whole lacks matches in no part. Null when no detector can match: then
 * {@link findCredentials} finds nothing in any part. Pass the screen to findCredentials for each part.
 */
export function screenCredentials(text: string): CredentialScreen | null {
  const specific = SPECIFIC.filter((d) => hinted(d, text));
  const generic = GENERIC.filter((d) => hinted(d, text));
  return specific.length || generic.length ? { specific, generic } : null;
}

/**
 * Replaces each credential with `[REDACTED:<kind>]` and reports each removal by kind and the hex
 * SHA-256 of the removed text, so two records of the same secret can be matched without keeping it.
 */
export function redact(text: string): RedactResult {
  const matches = findCredentials(text);
  if (matches.length === 0) return { text, redactions: [] };
  let out = "";
  let at = 0;
  const redactions: RemovedCredential[] = [];
  for (const m of matches) {
    const secret = text.slice(m.start, m.end);
    out += `${text.slice(at, m.start)}[REDACTED:${m.kind}]`;
    redactions.push({ kind: m.kind, sha256: sha256Hex(secret) });
    at = m.end;
  }
  return { text: out + text.slice(at), redactions };
}

/** Every detector's expression, in the order {@link findCredentials} runs them (benchmarks scan with these alone). */
export const CREDENTIAL_PATTERNS: readonly RegExp[] = [...SPECIFIC, ...GENERIC].map((d) => new RegExp(d.re.source, d.re.flags));

/** The kinds {@link findCredentials} can report. */
export const CREDENTIAL_KINDS = [...new Set([...SPECIFIC, ...GENERIC].map((d) => d.kind))] as readonly string[];
