/**
 * D1 fleet tables: the single source of truth for `migrations/` (`npm run db:generate`).
 * Times are milliseconds since the epoch (server clock).
 */
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

export const workspaces = sqliteTable("workspaces", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  /** `keep` (bodies of the roles in `retentionKeep`) or `digest_only`. */
  retentionMode: text("retention_mode", { enum: ["keep", "digest_only"] })
    .notNull()
    .default("keep"),
  /** JSON array of body roles kept under `keep`. */
  retentionKeep: text("retention_keep").notNull(),
  mode: text("mode", { enum: ["enforce", "observe"] })
    .notNull()
    .default("enforce"),
  createdMs: integer("created_ms").notNull(),
  /** Days an ended run's fleet rows stay in D1 after its last frame; then they are archived to R2 (docs/operations.md, "Retention"). */
  rowsKeptDays: integer("rows_kept_days").notNull().default(90),
});

export const operatorTokens = sqliteTable(
  "operator_tokens",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id").notNull(),
    name: text("name").notNull(),
    /** Hex SHA-256 of the token's secret part; the token itself is never stored. */
    secretHash: text("secret_hash").notNull(),
    /** `admin` may change things; `read` may only read (GET). */
    scope: text("scope", { enum: ["admin", "read"] })
      .notNull()
      .default("admin"),
    createdMs: integer("created_ms").notNull(),
    /** Null only for a workspace's bootstrap token (written into D1 by hand); every minted token expires. */
    expiresMs: integer("expires_ms"),
    /** The token that minted this one; null for a bootstrap token. */
    createdBy: text("created_by"),
    /** Updated at most once a minute. */
    lastUsedMs: integer("last_used_ms"),
    revokedMs: integer("revoked_ms"),
    /** The token that revoked this one. */
    revokedBy: text("revoked_by"),
  },
  (t) => [index("operator_tokens_workspace").on(t.workspaceId)],
);

export const enrollmentTokens = sqliteTable(
  "enrollment_tokens",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id").notNull(),
    secretHash: text("secret_hash").notNull(),
    createdMs: integer("created_ms").notNull(),
    expiresMs: integer("expires_ms").notNull(),
    usedMs: integer("used_ms"),
    usedBy: text("used_by"),
    /** The operator token that minted it. */
    createdBy: text("created_by"),
    revokedMs: integer("revoked_ms"),
    /** The only host key it enrolls (hex), when an approved device code minted it; null: any key. */
    publicKey: text("public_key"),
    /** The registered custom agent it was issued for (`registered_agents`); the host it enrolls wraps it. */
    agent: text("agent"),
  },
  (t) => [index("enrollment_tokens_workspace").on(t.workspaceId)],
);

/**
 * Device codes (protocol/device.ts): a command line asked to enroll a computer or sign in an
 * operator, and waits for an operator to approve or deny its user code in the console. Rows live
 * minutes (`expiresMs`) and are deleted a day after they expire.
 */
export const deviceCodes = sqliteTable(
  "device_codes",
  {
    /** The device code's id part (`oxd_<id>_<secret>`); only the secret's hash is stored. */
    id: text("id").primaryKey(),
    secretHash: text("secret_hash").notNull(),
    /** Hex SHA-256 of the normalized user code (`BCDF-GHJK`). */
    userCodeHash: text("user_code_hash").notNull(),
    purpose: text("purpose", { enum: ["enroll", "login"] }).notNull(),
    /** The host key the computer generated (enroll only): the token the approval yields enrolls only it. */
    publicKey: text("public_key"),
    hostname: text("hostname").notNull(),
    username: text("username").notNull(),
    os: text("os").notNull(),
    /** JSON array of the harnesses (and agents) the computer asks to wrap. */
    harnesses: text("harnesses").notNull(),
    /** The workspace the command line asked for (`--workspace`): the only one it can be approved into. */
    askedWorkspace: text("asked_workspace"),
    /** The address the request came from (CF-Connecting-IP). */
    address: text("address").notNull(),
    createdMs: integer("created_ms").notNull(),
    expiresMs: integer("expires_ms").notNull(),
    /** Seconds between polls; raised by 5 at each `slow_down`. */
    intervalS: integer("interval_s").notNull(),
    lastPollMs: integer("last_poll_ms"),
    /** 1 when the last poll came sooner than the interval (it was answered `slow_down`). */
    lastPollFast: integer("last_poll_fast").notNull().default(0),
    status: text("status", { enum: ["pending", "approved", "denied", "issued"] })
      .notNull()
      .default("pending"),
    /** The workspace it was approved (or denied) in, by which operator token, when. */
    workspaceId: text("workspace_id"),
    decidedBy: text("decided_by"),
    decidedMs: integer("decided_ms"),
    /** The scope of the operator token a `login` approval grants. */
    scope: text("scope", { enum: ["admin", "read"] }),
    issuedMs: integer("issued_ms"),
    /** The id of the token the poll that took the approval was given. */
    issuedToken: text("issued_token"),
  },
  (t) => [uniqueIndex("device_codes_user_code").on(t.userCodeHash), index("device_codes_expires").on(t.expiresMs)],
);

/**
 * Custom agents an operator registered by name (the name rules of protocol `AgentName`, never a
 * built-in harness name). Each registration issues a one-time enrollment token for the computer
 * that will run the agent (`enrollment_tokens.agent`).
 */
export const registeredAgents = sqliteTable(
  "registered_agents",
  {
    workspaceId: text("workspace_id").notNull(),
    name: text("name").notNull(),
    createdMs: integer("created_ms").notNull(),
    /** The operator token that registered it. */
    createdBy: text("created_by"),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.name] })],
);

export const hosts = sqliteTable(
  "hosts",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id").notNull(),
    publicKey: text("public_key").notNull(),
    keyId: text("key_id").notNull(),
    hostname: text("hostname").notNull(),
    status: text("status", { enum: ["active", "suspended", "unenrolled"] })
      .notNull()
      .default("active"),
    enrolledMs: integer("enrolled_ms").notNull(),
    lastSeenMs: integer("last_seen_ms"),
    /** Set by the cron when one of the host's agents has had data pending over 10 minutes. */
    degradedMs: integer("degraded_ms"),
    /** When this host's own part of its policy (suspension, its paused runs) last changed; never goes back. */
    policyMs: integer("policy_ms").notNull().default(0),
    /** Since when `publicKey` is the host's key (null: since enrollment). */
    keySinceMs: integer("key_since_ms"),
    /**
     * JSON array of the host's earlier keys, newest last: `{ key_id, pub, not_before_ms, not_after_ms }`.
     * They sign no request; a chain whose first lock one of them signed keeps being checked with it.
     */
    retiredKeys: text("retired_keys").notNull().default("[]"),
    unenrolledMs: integer("unenrolled_ms"),
  },
  (t) => [
    // The workspace's hosts in id order (the Wrapped agents panel and the hosts list page by it).
    index("hosts_workspace").on(t.workspaceId, t.id),
    // The health sweep's hosts marked degraded.
    index("hosts_degraded").on(t.degradedMs),
  ],
);

/** Wrapped harnesses (named at enrollment) and custom agents (seen on ingest), per host. */
export const agents = sqliteTable(
  "agents",
  {
    hostId: text("host_id").notNull(),
    name: text("name").notNull(),
    workspaceId: text("workspace_id").notNull(),
    kind: text("kind", { enum: ["harness", "custom"] }).notNull(),
    wrappedMs: integer("wrapped_ms"),
    firstSeenMs: integer("first_seen_ms"),
    lastSeenMs: integer("last_seen_ms"),
    lastDeliveredMs: integer("last_delivered_ms"),
    /** Since when the server has known of data from this agent that it does not hold yet. */
    pendingSinceMs: integer("pending_since_ms"),
    /** Last time the server refused something from this agent (a batch or a body). */
    lastRefusedMs: integer("last_refused_ms"),
    /** 1 when the host's last report said the agent's hooks are missing. */
    hooksMissing: integer("hooks_missing").notNull().default(0),
    degradedMs: integer("degraded_ms"),
    /** When the server first wrote this name for the host (the agent-name quota counts these). */
    createdMs: integer("created_ms"),
  },
  (t) => [
    primaryKey({ columns: [t.hostId, t.name] }),
    index("agents_host_created").on(t.hostId, t.createdMs),
    index("agents_workspace").on(t.workspaceId, t.name),
    index("agents_pending").on(t.pendingSinceMs),
    // The health sweep's agents marked degraded.
    index("agents_degraded").on(t.degradedMs),
  ],
);

export const policies = sqliteTable("policies", {
  workspaceId: text("workspace_id").primaryKey(),
  /** The policy's Record JSON text (unsigned; signed on the way out). */
  payload: text("payload").notNull(),
  etag: text("etag").notNull(),
  version: integer("version").notNull().default(1),
  updatedMs: integer("updated_ms").notNull(),
});

export const runs = sqliteTable(
  "runs",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id").notNull(),
    hostId: text("host_id").notNull(),
    harness: text("harness").notNull(),
    agent: text("agent"),
    sessionId: text("session_id").notNull(),
    status: text("status", { enum: ["live", "ended", "crashed", "closed", "sealed"] }).notNull(),
    /** The record's own outcome (agent_stop's, `crashed`, `unknown` once closed): what the export manifest names. */
    outcome: text("outcome"),
    /** The server's reading of the run from its frames (workers/chain/outcome.ts); null on a row from before it. */
    derivedOutcome: text("derived_outcome"),
    derivedReason: text("derived_reason"),
    /** Model calls the vendor answered or that failed, and of those the failed ones. */
    modelCalls: integer("model_calls").notNull().default(0),
    modelFailed: integer("model_failed").notNull().default(0),
    tier: text("tier").notNull(),
    tierReason: text("tier_reason").notNull(),
    grade: text("grade").notNull(),
    gradeReason: text("grade_reason").notNull(),
    spendMicrousd: integer("spend_microusd").notNull().default(0),
    /** The run's model calls the price table does not know (not in `spend_microusd`, never $0). */
    unpricedCalls: integer("unpriced_calls").notNull().default(0),
    frameCount: integer("frame_count").notNull().default(0),
    lockCount: integer("lock_count").notNull().default(0),
    gapCount: integer("gap_count").notNull().default(0),
    firstFrameMs: integer("first_frame_ms"),
    lastFrameMs: integer("last_frame_ms"),
    /** Server clock of the last frame stored; the cron's quiet test uses it, never the computer's clock. */
    lastReceivedMs: integer("last_received_ms"),
    /** The ChainObject's change counter: a row update applies only when it is newer. */
    version: integer("version").notNull().default(0),
    updatedMs: integer("updated_ms").notNull(),
    /** 1 once the computer ended the session (an agent_stop arrived, stored or refused after a seal). */
    hostStopped: integer("host_stopped").notNull().default(0),
    /** When an operator paused or sealed the run; null when it runs (or was resumed). Not part of the chain's summary. */
    pausedMs: integer("paused_ms"),
    /** When the server first wrote the row (the runs-per-hour quota counts these). */
    createdMs: integer("created_ms"),
    /** When an ended run's fleet rows go to the R2 archive: its last batch plus the workspace's `rows_kept_days` (null while live). */
    archiveAfterMs: integer("archive_after_ms"),
  },
  (t) => [
    index("runs_host_created").on(t.hostId, t.createdMs),
    index("runs_host_paused").on(t.hostId, t.pausedMs),
    index("runs_cron").on(t.status, t.lastReceivedMs),
    // The archive sweep's next runs, the oldest due first (workers/archive.ts).
    index("runs_archive").on(t.archiveAfterMs),
    // The runs list's order, newest frame first (lib/runs.ts RUN_ORDER), under each of its filters:
    // every page is an index range, whatever the workspace holds.
    index("runs_ws_order").on(t.workspaceId, t.lastFrameMs, t.id),
    index("runs_ws_status_order").on(t.workspaceId, t.status, t.lastFrameMs, t.id),
    index("runs_ws_host_order").on(t.workspaceId, t.hostId, t.lastFrameMs, t.id),
    index("runs_ws_tier_order").on(t.workspaceId, t.tier, t.lastFrameMs, t.id),
    index("runs_ws_grade_order").on(t.workspaceId, t.grade, t.lastFrameMs, t.id),
    index("runs_ws_harness_order").on(t.workspaceId, t.harness, t.lastFrameMs, t.id),
    index("runs_ws_agent_order").on(t.workspaceId, t.agent, t.lastFrameMs, t.id),
  ],
);

/**
 * Every key the server has signed with and when (GET /v1/keys). A key is written the first time
 * the server signs with it; the key before it stops signing at that instant.
 */
export const serverKeys = sqliteTable("server_keys", {
  keyId: text("key_id").primaryKey(),
  publicKey: text("public_key").notNull(),
  notBeforeMs: integer("not_before_ms").notNull(),
  /** Null while it is the key the server signs with. */
  notAfterMs: integer("not_after_ms"),
  /** The key before it, when its secret was at hand to vouch for this one. */
  endorsedBy: text("endorsed_by"),
  /** Hex Ed25519 signature by `endorsedBy` over protocol `endorsementInput`. */
  endorsement: text("endorsement"),
});

/**
 * Operator console sessions: a browser signs in by pasting an operator token once. The cookie
 * holds `oxs_<id>_<secret>`; only the secret's hash is stored. A session dies with its operator
 * token (revoked or expired), at `expiresMs`, or when signed out.
 */
export const consoleSessions = sqliteTable(
  "console_sessions",
  {
    id: text("id").primaryKey(),
    secretHash: text("secret_hash").notNull(),
    workspaceId: text("workspace_id").notNull(),
    /** The operator token pasted to sign in; the session checks it on every request. */
    tokenId: text("token_id").notNull(),
    /** The session's CSRF token, carried by every state-changing form. */
    csrf: text("csrf").notNull(),
    createdMs: integer("created_ms").notNull(),
    expiresMs: integer("expires_ms").notNull(),
    revokedMs: integer("revoked_ms"),
  },
  (t) => [index("console_sessions_token").on(t.tokenId)],
);

/**
 * Agents an operator paused: a harness or custom agent name, on one host or (`host_id` `*`) on
 * every host of the workspace. A row is the pause; resuming deletes it.
 */
export const agentPauses = sqliteTable(
  "agent_pauses",
  {
    workspaceId: text("workspace_id").notNull(),
    /** A host id, or `*` for every host of the workspace. */
    hostId: text("host_id").notNull(),
    name: text("name").notNull(),
    pausedMs: integer("paused_ms").notNull(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.hostId, t.name] })],
);

/** The totals a spend row and the daily rollup hold alike. */
const spendSums = () => ({
  calls: integer("calls").notNull(),
  /** Calls whose vendor or model the price table does not know: counted, never priced at $0. */
  unpricedCalls: integer("unpriced_calls").notNull(),
  microusd: integer("microusd").notNull(),
  inputTokens: integer("input_tokens").notNull(),
  outputTokens: integer("output_tokens").notNull(),
  cacheReadTokens: integer("cache_read_tokens").notNull(),
  cacheWriteTokens: integer("cache_write_tokens").notNull(),
});

/**
 * Priced model calls, per run, UTC day (of the server's receipt), vendor, model and price table
 * version: a copy of the run's ChainObject, which prices each `llm_call` once as it is appended.
 * Rows hold totals, so writing one again is a no-op; `version` keeps an older copy from
 * overwriting a newer one.
 */
export const spend = sqliteTable(
  "spend",
  {
    runId: text("run_id").notNull(),
    day: text("day").notNull(),
    vendor: text("vendor").notNull(),
    model: text("model").notNull(),
    /** The price table the calls were priced with (`genai-prices@0.1.8`); empty for unpriced calls. */
    priceVersion: text("price_version").notNull(),
    workspaceId: text("workspace_id").notNull(),
    hostId: text("host_id").notNull(),
    /** The run's harness label (a harness or a custom agent name); null on the computer's own chain. */
    agent: text("agent"),
    ...spendSums(),
    version: integer("version").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.runId, t.day, t.vendor, t.model, t.priceVersion] }),
    index("spend_ws_day").on(t.workspaceId, t.day),
    index("spend_ws_host_day").on(t.workspaceId, t.hostId, t.day),
  ],
);

/**
 * The workspace's spend per UTC day, computer, agent, vendor, model and price table: the `spend`
 * rows summed, kept as they arrive (workers/spend/rollup.ts), so the Spend page reads a day's few
 * rows instead of every run's. The projection's consumer adds to it what each `spend` row it
 * writes changes (new minus stored), in the transaction that writes the row: a message delivered
 * again changes nothing. `agent` is `''` on a computer's own chain (a key column is never null).
 */
export const spendDaily = sqliteTable(
  "spend_daily",
  {
    workspaceId: text("workspace_id").notNull(),
    day: text("day").notNull(),
    hostId: text("host_id").notNull(),
    agent: text("agent").notNull(),
    vendor: text("vendor").notNull(),
    model: text("model").notNull(),
    priceVersion: text("price_version").notNull(),
    ...spendSums(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.day, t.hostId, t.agent, t.vendor, t.model, t.priceVersion] })],
);

/**
 * Runs with spend, per UTC day, computer and agent, kept with {@link spendDaily}: `runs` the runs
 * with calls that day; `runsLast` the runs whose latest day with calls is that day, so the runs
 * with calls in a period that ends today are the sum of `runsLast` over its days (each run once).
 */
export const spendDailyRuns = sqliteTable(
  "spend_daily_runs",
  {
    workspaceId: text("workspace_id").notNull(),
    day: text("day").notNull(),
    hostId: text("host_id").notNull(),
    agent: text("agent").notNull(),
    runs: integer("runs").notNull(),
    runsLast: integer("runs_last").notNull(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.day, t.hostId, t.agent] })],
);

/**
 * A workspace's tools (docs/api.md "Workspace tools"): what the hosted MCP endpoint serves. The
 * definition served is the approved one (`defSha256`); an upstream MCP tool's live definition is
 * re-checked against `upstreamSha256`, and a difference is held in `drift` until approved.
 */
export const tools = sqliteTable(
  "tools",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id").notNull(),
    name: text("name").notNull(),
    title: text("title"),
    description: text("description").notNull(),
    /** JSON Schema (object) of the arguments, as approved. */
    inputSchema: text("input_schema").notNull(),
    /** JSON: the tool's MCP annotations, or null. */
    annotations: text("annotations"),
    /** JSON: the binding (`http` or `mcp`, workers/tools/schema.ts). */
    binding: text("binding").notNull(),
    /** JSON array of access clauses. */
    access: text("access").notNull().default("[]"),
    /** Charged to the workspace's budgets per call forwarded, in millionths of a US dollar. */
    costMicrousd: integer("cost_microusd").notNull().default(0),
    /** JSON array of call-count limits. */
    limits: text("limits").notNull().default("[]"),
    status: text("status", { enum: ["active", "disabled"] })
      .notNull()
      .default("active"),
    /** The approved definition's digest (protocol toolDefinitionDigest of the served definition before narrowing). */
    defSha256: text("def_sha256").notNull(),
    /** An `mcp` tool's upstream definition digest at approval; null for `http`. */
    upstreamSha256: text("upstream_sha256"),
    /** JSON: the upstream definition last seen when it differed from the approved one (`{ seen_ms, sha256, definition }`, or `{ seen_ms, missing: true }`). */
    drift: text("drift"),
    /** When the upstream definition was last checked. */
    checkedMs: integer("checked_ms"),
    /** base64 of IV (12 bytes) and AES-256-GCM ciphertext of the credential; never answered. */
    credential: text("credential"),
    /** The id of the OXAGEN_TOOLS_KEY that encrypted `credential`. */
    credentialKeyId: text("credential_key_id"),
    credentialSetMs: integer("credential_set_ms"),
    version: integer("version").notNull().default(1),
    createdMs: integer("created_ms").notNull(),
    updatedMs: integer("updated_ms").notNull(),
    approvedMs: integer("approved_ms").notNull(),
    /** The operator token that approved the served definition last. */
    approvedBy: text("approved_by"),
  },
  (t) => [uniqueIndex("tools_ws_name").on(t.workspaceId, t.name), index("tools_checked").on(t.checkedMs)],
);

/**
 * Tokens an operator issues to one agent for calling the workspace's MCP endpoint directly
 * (`Authorization: Bearer oxt_…`): their calls are in the meter log only.
 */
export const toolTokens = sqliteTable(
  "tool_tokens",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id").notNull(),
    /** The agent name the token's calls are made as. */
    agent: text("agent").notNull(),
    secretHash: text("secret_hash").notNull(),
    createdMs: integer("created_ms").notNull(),
    expiresMs: integer("expires_ms").notNull(),
    createdBy: text("created_by").notNull(),
    revokedMs: integer("revoked_ms"),
  },
  (t) => [index("tool_tokens_workspace").on(t.workspaceId)],
);
