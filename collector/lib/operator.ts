import { createHash } from "node:crypto";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { fromHex, plural, RunId, ServerKeyEntry } from "../../protocol/index.ts";
import { parse } from "./args.ts";
import { ExitError, UsageError } from "./errors.ts";
import { refusal, requestJson, unreachable } from "./http.ts";
import { writeFileAtomic } from "./state.ts";

/**
 * The operator commands' exit codes (`oxagen login`, `runs`, `export`, …), stable for scripts. 1 and
 * 3 are `oxagen verify`'s verdicts, which `oxagen export --verify` answers.
 */
export const EXIT = { ok: 0, tampered: 1, usage: 2, incomplete: 3, signedOut: 4, unreachable: 5, refused: 6 } as const;

/** The exit codes as every operator command's help states them. */
export const EXIT_HELP = `Exit codes: 0 done, 2 bad arguments, 4 not signed in or the token was refused (run oxagen login),
5 the server cannot be reached, 6 the server refused (the message says why).`;

/** Where `oxagen login` keeps the operator's credentials (mode 0600), apart from the computer's tacho state. */
export function credentialsPath(): string {
  return process.env.OXAGEN_OPERATOR_FILE || join(homedir(), ".config", "oxagen", "operator.json");
}

/** What `oxagen login` stores: the server, the token and what it may do, and the server keys pinned at login. */
export const Credentials = z.strictObject({
  v: z.literal(1),
  server: z.string().url(),
  token: z.string().min(1),
  token_id: z.string(),
  workspace: z.string(),
  scope: z.enum(["admin", "read"]),
  expires_ms: z.number().int().nullable(),
  /** True when `oxagen login` minted the token (a device code): `oxagen logout` revokes it then. */
  minted: z.boolean(),
  /** The server's keys (`GET /v1/keys`) as pinned at login: `oxagen export --verify` checks bundles against them. */
  keys: z.array(ServerKeyEntry),
  pinned_ms: z.number().int(),
});
/** One of {@link Credentials}. */
export type Credentials = z.infer<typeof Credentials>;

/** The stored credentials, or null when this user is not signed in; a damaged file says so. */
export function readCredentials(): Credentials | null {
  let text: string;
  try {
    text = readFileSync(credentialsPath(), "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw new ExitError(EXIT.signedOut, `cannot read ${credentialsPath()}: ${(err as Error).message}`);
  }
  let value: unknown = null;
  try {
    value = JSON.parse(text);
  } catch {}
  const parsed = Credentials.safeParse(value);
  if (!parsed.success) throw new ExitError(EXIT.signedOut, `${credentialsPath()} is damaged; sign in again with oxagen login`);
  return parsed.data;
}

/** Writes the credentials atomically, mode 0600, in a 0700 folder. */
export function writeCredentials(c: Credentials): void {
  writeFileAtomic(credentialsPath(), `${JSON.stringify(Credentials.parse(c), null, 2)}\n`);
}

/** Removes the stored credentials; true when there were some. */
export function removeCredentials(): boolean {
  const had = existsSync(credentialsPath());
  rmSync(credentialsPath(), { force: true });
  return had;
}

/** The stored credentials, or an ExitError (4) that says how to sign in. */
export function signedIn(program: string): Credentials {
  const c = readCredentials();
  if (!c) throw new ExitError(EXIT.signedOut, `${program}: not signed in; run oxagen login --server URL`);
  return c;
}

/** A key's fingerprint as ssh shows one: `SHA256:` and the base64 of its SHA-256, unpadded. */
export function fingerprint(pubHex: string): string {
  return `SHA256:${createHash("sha256").update(fromHex(pubHex, 32)).digest("base64").replace(/=+$/, "")}`;
}

/** Calls the operator API with the stored token: a 401 is exit 4, an unreachable server 5, any other refusal 6. */
export class OperatorApi {
  readonly creds: Credentials;
  readonly program: string;
  constructor(creds: Credentials, program: string) {
    this.creds = creds;
    this.program = program;
  }

  /** The answer's JSON body, for a 2xx; otherwise the refusal as an ExitError. */
  async json<T = unknown>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
    const answer = await requestJson(
      new URL(path, this.creds.server),
      { ...init, headers: { authorization: `Bearer ${this.creds.token}` }, timeoutMs: 60_000 },
      EXIT.unreachable,
    );
    if (answer.ok) return answer.body as T;
    throw this.refused(answer.status, refusal(answer));
  }

  /**
   * Every page of a paged list (GET /v1/hosts, /v1/agents: `limit`, `cursor`, `next`), the pages'
   * `key` lists joined; the rest of the answer is the first page's.
   */
  async allPages<K extends string, T extends Record<K, unknown[]> & { next?: string | null }>(path: string, key: K): Promise<T> {
    let first: T | null = null;
    for (let cursor: string | null = null; ; ) {
      const page: T = await this.json<T>(`${path}?limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      if (first === null) first = page;
      else first[key].push(...page[key]);
      cursor = page.next ?? null;
      if (cursor === null) return { ...first, next: null };
    }
  }

  /** A streamed answer (an export, a body), for a 2xx; otherwise the refusal as an ExitError. */
  async stream(path: string): Promise<Response> {
    let res: Response;
    try {
      res = await fetch(new URL(path, this.creds.server), { headers: { authorization: `Bearer ${this.creds.token}` } });
    } catch (err) {
      throw new ExitError(EXIT.unreachable, `${this.program}: ${unreachable(new URL(this.creds.server).origin, err)}`);
    }
    if (res.ok) return res;
    const body: unknown = await res.json().catch(() => null);
    throw this.refused(res.status, refusal({ status: res.status, ok: false, body, headers: res.headers }));
  }

  refused(status: number, why: { code: string; message: string }): ExitError {
    if (status === 401)
      return new ExitError(
        EXIT.signedOut,
        `${this.program}: the server refused the stored token: ${why.message} Sign in again: oxagen login --server ${this.creds.server}`,
      );
    return new ExitError(EXIT.refused, `${this.program}: ${why.message} (HTTP ${status}, ${why.code})`);
  }
}

/** The signed-in API for a command. */
export function operatorApi(program: string): OperatorApi {
  return new OperatorApi(signedIn(program), program);
}

/**
 * A table as a person reads it on a terminal (columns aligned), or tab-separated lines with the
 * header first when the output is piped (for `cut`, `awk`); `--json` is for everything else.
 */
export function table(headers: string[], rows: (string | number | null)[][], tty = process.stdout.isTTY === true): string {
  const cells = rows.map((r) => r.map((c) => (c === null ? "-" : String(c))));
  if (!tty) return `${[headers, ...cells].map((r) => r.map((c) => c.replace(/[\t\n]/g, " ")).join("\t")).join("\n")}\n`;
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join("  ");
  return `${[line(headers), ...cells.map(line)].join("\n")}\n`;
}

/** A time as the commands print it: UTC to the second, or a dash. */
export function when(ms: number | null | undefined): string {
  return ms === null || ms === undefined
    ? "-"
    : new Date(ms)
        .toISOString()
        .replace("T", " ")
        .replace(/\.\d+Z$/, "Z");
}

/** Prints a value as `--json` does: indented, one document. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** The `propagation` of an operator's change, in a sentence or two: which computers applied it, and why the others did not. */
export function propagationText(
  p: { hosts: number; applied: number; not_applied: { host_id: string; hostname: string; why: string }[]; more: number } | undefined,
): string {
  if (!p) return "";
  const lines = [`applied on ${p.applied} of ${plural(p.hosts, "computer")} before the answer`];
  for (const n of p.not_applied) lines.push(`  not yet on ${n.hostname} (${n.host_id}): ${n.why}`);
  if (p.more > 0) lines.push(`  and ${p.more} more`);
  return `${lines.join("\n")}\n`;
}

/** A run id from the command line, or a usage error. */
export function runArg(program: string, positionals: string[], usage: string): string {
  if (positionals.length !== 1) throw new UsageError(`${program}: name exactly one run\n${usage}`);
  const id = positionals[0]!;
  if (!RunId.safeParse(id).success) throw new UsageError(`${program}: ${id} is not a run id (run_ and 32 hex; oxagen runs lists them)`);
  return id;
}

/** `oxagen pause|resume|seal RUN`: one POST on the run, its propagation printed (or the answer, --json). */
export async function runAction(action: "pause" | "resume" | "seal", args: string[], usage: string): Promise<number> {
  const program = `oxagen ${action}`;
  const { values, positionals } = parse(program, args, { json: { type: "boolean", default: false } });
  const id = runArg(program, positionals, usage);
  const answer = await operatorApi(program).json<{ propagation?: Parameters<typeof propagationText>[0] }>(`/v1/runs/${id}/${action}`, {
    method: "POST",
    body: {},
  });
  if (values.json) printJson(answer);
  else
    process.stdout.write(
      `${action === "pause" ? "paused" : action === "resume" ? "resumed" : "sealed"} ${id}: ${propagationText(answer.propagation)}`,
    );
  return EXIT.ok;
}
