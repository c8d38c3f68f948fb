/**
 * The collector ↔ server wire contract: paths, request and answer schemas. Operator routes are
 * the server's own and are described in docs/api.md.
 * @module
 */
import { z } from "zod";
import { FrameWire } from "./chain.ts";
import { MAX_BODY_BYTES } from "./frames.ts";
import { AgentName, ChainId, HostId, Sha256Hex } from "./ids.ts";
import { utf8 } from "./bytes.ts";
import { pae, SignedLock } from "./lock.ts";
import { MAX_MCP_REQUEST_BYTES } from "./tools.ts";
import { MAX_UPLOAD_BYTES } from "./uploads.ts";

/** A route with one path parameter: call it for the path to send, read `pattern` for the path the server matches (`:name`). */
export interface ParamRoute<P extends string> {
  (value: string): string;
  readonly pattern: P;
}

function withParam<P extends string>(pattern: P): ParamRoute<P> {
  const at = pattern.lastIndexOf("/:");
  const route = (value: string) => `${pattern.slice(0, at + 1)}${value}`;
  return Object.assign(route, { pattern });
}

/** Every route the collector calls, the one place their paths are written (the server routes by them too). */
export const ROUTES = {
  health: "/healthz",
  keys: "/v1/keys",
  keyEndorsements: "/v1/keys/endorsements",
  enroll: "/v1/enroll",
  /** Sign in from a command line (protocol/device.ts): ask for a code, then poll for what its approval yields. */
  deviceAuthorize: "/v1/device/authorize",
  deviceToken: "/v1/device/token",
  ingest: "/v1/ingest",
  body: withParam("/v1/bodies/:sha256"),
  /** Host-signed: several bodies of one run in one request (protocol/uploads.ts). */
  bodies: "/v1/bodies",
  policy: "/v1/policy",
  /** A host-signed WebSocket upgrade: the server pushes `{"type":"policy","etag":…}` when the host's policy changes. */
  push: "/v1/host/push",
  /** Host-signed: lease budget for model calls not yet priced (the gateway's reservation), and settle a lease. */
  budgetLease: "/v1/host/budget/leases",
  budgetSettle: withParam("/v1/host/budget/leases/:id"),
  hostStatus: "/v1/host",
  hostKey: "/v1/host/key",
  hostRun: withParam("/v1/host/runs/:id"),
  /**
   * The workspace's hosted MCP endpoint (POST only, stateless Streamable HTTP, both protocol
   * revisions): host-signed by the gateway, or a direct client's tool token (docs/api.md).
   */
  mcp: withParam("/v1/mcp/:workspace"),
} as const;

/** The most chains one ingest batch may carry. */
export const MAX_BATCH_CHAINS = 100;
/** The most frames one ingest batch may carry. */
export const MAX_BATCH_FRAMES = 5000;
/** The largest ingest body, in bytes. */
export const MAX_INGEST_BYTES = 8 * 1024 * 1024;
/** The largest body of a collector route not in {@link ROUTE_BODY_LIMITS}, in bytes. */
export const MAX_SMALL_BODY_BYTES = 64 * 1024;

/** The collector routes whose request body may be larger than {@link MAX_SMALL_BODY_BYTES}: method, path pattern, bytes. */
export const ROUTE_BODY_LIMITS: readonly { method: string; path: string; bytes: number }[] = [
  { method: "POST", path: ROUTES.ingest, bytes: MAX_INGEST_BYTES },
  { method: "PUT", path: ROUTES.body.pattern, bytes: MAX_BODY_BYTES },
  { method: "POST", path: ROUTES.bodies, bytes: MAX_UPLOAD_BYTES },
  { method: "POST", path: ROUTES.mcp.pattern, bytes: MAX_MCP_REQUEST_BYTES },
];

/** The file name a run's export bundle is saved under: the console's download and `oxagen export`. */
export const exportFileName = (runId: string): string => `${runId}.oxagen.jsonl`;

/**
 * Every error answer: a stable code and a sentence, with the validation `issues` for a bad request.
 * Some codes carry further members (a device poll's `interval`, an exhausted budget's scope), so a
 * reader must accept members it does not know: it is kept open for them, not strict.
 */
export const ErrorAnswer = z.looseObject({ error: z.string(), message: z.string(), issues: z.unknown().optional() });

/**
 * The shape of every Oxagen token: a kind (`oxo` operator, `oxe` one-time enrollment, `oxs` console
 * session, `oxd` device code),
 * a 16-hex id and a 48-hex secret. The server parses tokens by it; the collector checks a token
 * against it before sending one, so a token copied in part is named as such.
 */
export const TOKEN_SHAPE = /^([a-z]{3})_([0-9a-f]{16})_([0-9a-f]{48})$/;

/** `POST /v1/enroll`: a one-time token and the host's public key. */
export const EnrollRequest = z.strictObject({
  token: z.string().min(16).max(256),
  public_key: Sha256Hex,
  hostname: z.string().min(1).max(255),
  harnesses: z.array(z.string().min(1).max(64)).max(32),
});

/**
 * `GET /healthz`. `origin` is the server's own origin, the one every host request must be signed
 * for (docs/operations.md, "The server's origin"); a server from before it was named leaves it out.
 */
export const HealthAnswer = z.looseObject({
  ok: z.literal(true),
  version: z.string(),
  protocol: z.number().int(),
  origin: z.url().optional(),
});
/** One of {@link HealthAnswer}. */
export type HealthAnswer = z.infer<typeof HealthAnswer>;

/** The answer to an enrollment. */
export const EnrollAnswer = z.strictObject({
  host_id: HostId,
  workspace: z.string(),
  server_key: z.strictObject({ pub: Sha256Hex, key_id: z.string().regex(/^[0-9a-f]{16}$/) }),
});

/** What a chain part says about its run, checked against the run id (which hashes host, harness and session). */
export const RunMeta = z.strictObject({
  harness: AgentName,
  agent: AgentName.nullable(),
  session_id: z.string().min(1).max(256),
});

/** One chain's part of an ingest batch. A host chain (`host_<id>`) carries no run meta. */
export const ChainPart = z.strictObject({
  chain: ChainId,
  run: RunMeta.optional(),
  frames: z.array(FrameWire).max(MAX_BATCH_FRAMES),
  locks: z.array(SignedLock).max(1000),
});

/** `POST /v1/ingest`. */
export const IngestRequest = z.strictObject({ chains: z.array(ChainPart).min(1).max(MAX_BATCH_CHAINS) });
/** One of {@link IngestRequest}. */
export type IngestRequest = z.infer<typeof IngestRequest>;

/**
 * What the server did with one chain's part, so the collector can resend exactly what is needed:
 * `stored` frames are durable from seq 0 up to `stored - 1`; `missing` are seq ranges [from, to]
 * it still lacks below the highest seq it holds; `held` counts frames kept beyond a hole;
 * `conflicts` are seqs where a different frame was already stored (kept as evidence).
 */
export const ChainAck = z.strictObject({
  chain: ChainId,
  status: z.enum(["accepted", "retryable", "refused"]),
  stored: z.number().int().nonnegative(),
  duplicates: z.array(z.number().int().nonnegative()),
  missing: z.array(z.tuple([z.number().int().nonnegative(), z.number().int().nonnegative()])),
  held: z.number().int().nonnegative(),
  conflicts: z.array(z.number().int().nonnegative()),
  locks_stored: z.number().int().nonnegative(),
  locks_refused: z.array(z.strictObject({ lock_seq: z.number().int().nonnegative(), reason: z.string() })),
  message: z.string().optional(),
});
/** One of {@link ChainAck}. */
export type ChainAck = z.infer<typeof ChainAck>;

/** The ack of a chain's part before anything of it is taken: nothing stored, held, refused or missing yet. */
export function chainAck(chain: string, status: ChainAck["status"]): ChainAck {
  return {
    chain,
    status,
    stored: 0,
    duplicates: [],
    missing: [],
    held: 0,
    conflicts: [],
    locks_stored: 0,
    locks_refused: [],
  };
}

/** The answer to an ingest batch. */
export const IngestAnswer = z.strictObject({ chains: z.array(ChainAck) });

/** Body upload headers besides the host signature: the run (`POST /v1/bodies` and `PUT /v1/bodies/:sha256`) and the body's role (the PUT only; an upload names each part's role). */
export const BODY_HEADERS = { run: "x-oxagen-run", role: "x-oxagen-role" } as const;

/**
 * `POST /v1/host` (host-signed): what only the collector can see, per wrapped harness or custom
 * agent: frames recorded but not yet acknowledged (and since when), and whether its hooks are in
 * place. The server folds it into the Wrapped agents health. `GET /v1/host` answers {@link HostStatus}.
 */
export const HostReport = z.strictObject({
  agents: z
    .array(
      z.strictObject({
        name: AgentName,
        pending_frames: z.number().int().nonnegative(),
        oldest_pending_ms: z.number().int().nonnegative().nullable(),
        hooks_ok: z.boolean(),
      }),
    )
    .max(64),
});
/** One of {@link HostReport}. */
export type HostReport = z.infer<typeof HostReport>;

/** The answer to `GET /v1/host` and `POST /v1/host`. */
export const HostStatus = z.strictObject({
  host_id: HostId,
  workspace: z.string(),
  status: z.enum(["active", "suspended"]),
  policy_etag: z.string(),
  /** Each wrapped harness and custom agent with the health the Wrapped agents panel shows. */
  agents: z.array(z.strictObject({ name: z.string(), health: z.string(), reason: z.string() })),
});

/**
 * `POST /v1/host/key` (signed with the host's current key): the host's new public key and the
 * proof that the new key's holder asks for it, `proof` = Ed25519 by the new key over
 * {@link hostKeyProofInput}. From then on requests are signed with the new key only.
 */
export const HostKeyRotation = z.strictObject({ public_key: Sha256Hex, proof: z.string().regex(/^[0-9a-f]{128}$/) });
/** One of {@link HostKeyRotation}. */
export type HostKeyRotation = z.infer<typeof HostKeyRotation>;

/** The DSSE payload type of a key rotation's proof. */
export const HOST_KEY_PAYLOAD_TYPE = "application/vnd.oxagen.host-key.v1";

/** What a new host key signs to take over from the current one: `HOST "\n" NEW_PUB_HEX "\n" CURRENT_KEY_ID`. */
export function hostKeyProofInput(hostId: string, newPublicKeyHex: string, currentKeyId: string): Uint8Array {
  return pae(HOST_KEY_PAYLOAD_TYPE, utf8(`${hostId}\n${newPublicKeyHex}\n${currentKeyId}`));
}

/** The answer to a key rotation. */
export const HostKeyAnswer = z.strictObject({ host_id: HostId, key_id: z.string(), retired_key_id: z.string() });

/** The most one lease request may ask for or give back (`microusd`, `add_microusd`): $1000. */
export const MAX_LEASE_MICROUSD = 1_000_000_000;

/** `POST /v1/host/budget/leases`: hold `microusd` of the run's (and its host's and workspace's) budget for `ttl_ms`. */
export const BudgetLeaseRequest = z.strictObject({
  /** A run, or the asking computer's own chain (`host_<host id>`: the gateway's calls tied to no session). */
  run: z.string().regex(/^(?:run_[0-9a-f]{32}|host_[a-z0-9][a-z0-9_-]{0,63})$/),
  microusd: z.number().int().positive().max(MAX_LEASE_MICROUSD),
  ttl_ms: z.number().int().min(1000).max(3_600_000).default(600_000),
});

/**
 * `PATCH /v1/host/budget/leases/:id`: change a lease's amount by `add_microusd` (negative gives
 * budget back, never below 0) and hold it `ttl_ms` from now. Growing is refused like a new lease.
 */
export const BudgetLeaseResize = z.strictObject({
  add_microusd: z.number().int().min(-MAX_LEASE_MICROUSD).max(MAX_LEASE_MICROUSD),
  ttl_ms: z.number().int().min(1000).max(3_600_000).default(600_000),
});

/** A granted (or resized) lease: its id, the amount it holds now, and when it expires. */
export const BudgetLeaseGrant = z.object({
  granted: z.literal(true),
  lease_id: z.string().regex(/^lease_[0-9a-f]{32}$/),
  microusd: z.number().int().nonnegative(),
  expires_ms: z.number().int(),
  /** The least room left, after this lease, among the budget scopes its run counts toward; null when no clause limits it. */
  room_microusd: z.number().int().nonnegative().nullable().optional(),
});
/** One of {@link BudgetLeaseGrant}. */
export type BudgetLeaseGrant = z.infer<typeof BudgetLeaseGrant>;
