/** @jsxImportSource hono/jsx */
import { DEVICE_PAGE as PAGE, type deviceState } from "../../lib/device.ts";
import { SIGN_OUT } from "../session.ts";
import { Layout, type PageContext, When } from "../layout.tsx";

/** A device code as the approval page shows it. */
export interface DeviceView {
  id: string;
  code: string;
  purpose: "enroll" | "login";
  state: ReturnType<typeof deviceState>;
  hostname: string;
  user: string;
  os: string;
  harnesses: string[];
  keyId: string | null;
  askedWorkspace: string | null;
  address: string;
  createdMs: number;
  expiresMs: number;
  decidedBy: string | null;
  decidedMs: number | null;
  decidedWorkspace: string | null;
  issuedMs: number | null;
}

/** The code form: a person types what their command line shows. */
function CodeForm(props: { value: string; error: string | null }) {
  return (
    <form method="get" action={PAGE}>
      <label for="code">Code</label>
      <input
        id="code"
        name="code"
        value={props.value}
        autocomplete="off"
        spellcheck={false}
        size={12}
        required
        aria-describedby={props.error ? "code-error" : "code-help"}
      />
      {props.error ? (
        <p class="field-error" id="code-error" role="alert">
          {props.error}
        </p>
      ) : null}
      <p class="muted" id="code-help">
        The eight letters <code>tacho enroll</code> or <code>oxagen login</code> printed, like <code>BCDF-GHJK</code>.
      </p>
      <button type="submit">Look up</button>
    </form>
  );
}

function Facts(props: { d: DeviceView; ctx: PageContext }) {
  const d = props.d;
  return (
    <dl class="facts">
      <dt>Code</dt>
      <dd class="mono">{d.code}</dd>
      <dt>Asks to</dt>
      <dd>
        {d.purpose === "enroll"
          ? "enroll this computer, so its agents' runs are recorded"
          : "sign in the oxagen command line (an operator token)"}
      </dd>
      <dt>Computer</dt>
      <dd>{d.hostname}</dd>
      <dt>User</dt>
      <dd>{d.user}</dd>
      <dt>Operating system</dt>
      <dd>{d.os}</dd>
      {d.purpose === "enroll" ? (
        <>
          <dt>Harnesses</dt>
          <dd>{d.harnesses.length > 0 ? d.harnesses.join(", ") : "none (custom agents only: tacho hook --agent NAME)"}</dd>
          <dt>Host key</dt>
          <dd>
            <code>{d.keyId}</code> <span class="muted">(the computer's command line prints the same id)</span>
          </dd>
        </>
      ) : null}
      <dt>Workspace</dt>
      <dd>
        <code>{d.decidedWorkspace ?? props.ctx.workspaceId}</code>
        {d.askedWorkspace ? <span class="muted"> (the computer asked for {d.askedWorkspace})</span> : null}
      </dd>
      <dt>Asked from</dt>
      <dd>
        <code>{d.address}</code> at <When ms={d.createdMs} />
      </dd>
      <dt>Expires</dt>
      <dd>
        <When ms={d.expiresMs} />
      </dd>
    </dl>
  );
}

function Decision(props: { d: DeviceView; ctx: PageContext }) {
  const { d, ctx } = props;
  if (d.state === "issued")
    return (
      <p class="notice" role="status">
        This code was used: approved by token <code>{d.decidedBy}</code> at <When ms={d.decidedMs} />, collected by the command line at{" "}
        <When ms={d.issuedMs} />. A code works once.
      </p>
    );
  if (d.state === "approved")
    return (
      <p class="notice" role="status">
        Approved by token <code>{d.decidedBy}</code> at <When ms={d.decidedMs} />: the command line collects it at its next poll (every few
        seconds).
      </p>
    );
  if (d.state === "denied")
    return (
      <p class="notice bad" role="status">
        Denied by token <code>{d.decidedBy}</code> at <When ms={d.decidedMs} />: nothing was issued.
      </p>
    );
  if (d.state === "expired")
    return (
      <p class="notice bad" role="status">
        This code expired at <When ms={d.expiresMs} /> without being approved. Run the command again on the computer for a new one.
      </p>
    );
  const deny = (
    <form class="inline" method="post" action={`${PAGE}/${d.id}/deny`}>
      <input type="hidden" name="csrf" value={ctx.csrf} />
      <button type="submit" class="danger">
        Deny
      </button>
    </form>
  );
  if (ctx.scope !== "admin")
    return (
      <p class="notice bad" role="status">
        Your token may only read: approving or denying takes an admin token. Sign in with an admin token of this workspace to decide.
      </p>
    );
  if (d.askedWorkspace !== null && d.askedWorkspace !== ctx.workspaceId)
    return (
      <>
        <p class="notice bad" role="status">
          The computer asks for workspace <code>{d.askedWorkspace}</code>; you are signed in to <code>{ctx.workspaceId}</code>. Sign in to
          that workspace to approve it.
        </p>
        <div class="actions">{deny}</div>
      </>
    );
  return (
    <>
      <p>
        Approve only a code you started yourself, or one read to you by someone you trust
        {d.purpose === "enroll" ? ", and whose host key matches what the computer printed" : ""}.
      </p>
      <div class="actions">
        <form class="inline" method="post" action={`${PAGE}/${d.id}/approve`}>
          <input type="hidden" name="csrf" value={ctx.csrf} />
          {d.purpose === "login" ? (
            <>
              <label for="scope">The command line's token may</label>
              <select id="scope" name="scope">
                <option value="read">read only</option>
                <option value="admin">read and change (admin)</option>
              </select>{" "}
            </>
          ) : null}
          <button type="submit">
            {d.purpose === "enroll" ? `Approve: enroll into ${ctx.workspaceId}` : `Approve: sign in to ${ctx.workspaceId}`}
          </button>
        </form>
        {deny}
      </div>
    </>
  );
}

/**
 * Approving a command line's sign-in: the code form, or the code's request (computer, user, OS,
 * harnesses, host key, where it came from) with Approve and Deny for a pending one.
 */
export function DevicePage(props: {
  ctx: PageContext;
  device: DeviceView | null;
  typed: string;
  error: string | null;
  notice: string | null;
}) {
  const d = props.device;
  const back = `${PAGE}${d ? `?code=${d.code}` : ""}`;
  return (
    <Layout title="Approve a computer" here={PAGE} ctx={props.ctx}>
      <h1>{d?.purpose === "login" ? "Approve a command-line sign-in" : "Approve a computer"}</h1>
      {props.notice ? (
        <p class="notice" role="status">
          {props.notice}
        </p>
      ) : null}
      {d ? (
        <>
          <Facts d={d} ctx={props.ctx} />
          <Decision d={d} ctx={props.ctx} />
          <form class="inline" method="post" action={SIGN_OUT}>
            <input type="hidden" name="csrf" value={props.ctx.csrf} />
            <input type="hidden" name="next" value={back} />
            <button type="submit">Sign in to another workspace</button>
          </form>
          <h2>Another code</h2>
          <CodeForm value="" error={null} />
        </>
      ) : (
        <CodeForm value={props.typed} error={props.error} />
      )}
    </Layout>
  );
}
