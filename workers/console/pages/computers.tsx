/** @jsxImportSource hono/jsx */
import { HARNESSES } from "../../../protocol/index.ts";
import { Action, Layout, type PageContext, plural, State, When, Head } from "../layout.tsx";

type HostView = {
  id: string;
  hostname: string;
  key_id: string;
  status: string;
  enrolled_ms: number;
  last_seen_ms: number | null;
  unenrolled_ms: number | null;
};

/** What an enrollment token was made for: the token, and the harnesses its `tacho enroll` line wraps. */
export interface Minted {
  token: string;
  expires_ms: number;
  harnesses: string[];
}

/** Names several enrolled computers share: a computer enrolled twice, or two computers with one name. */
function sharedNames(hosts: HostView[]): Map<string, HostView[]> {
  const by = new Map<string, HostView[]>();
  for (const h of hosts) by.set(h.hostname, [...(by.get(h.hostname) ?? []), h]);
  return new Map([...by].filter(([, list]) => list.length > 1));
}

function Row(props: { ctx: PageContext; h: HostView; twins: number }) {
  const h = props.h;
  return (
    <tr>
      <th scope="row">
        {h.hostname}
        {props.twins > 0 ? <span class="dup"> · same name as {plural(props.twins, "other computer")}</span> : null}
      </th>
      <td class="mono">
        <a href={`/console/runs/host_${h.id}`} title="The computer's own chain: calls tied to no session">
          {h.id}
        </a>
      </td>
      <td class="mono">{h.key_id}</td>
      <td>
        <State value={h.status} />
      </td>
      <td>
        <When ms={h.enrolled_ms} />
      </td>
      <td>
        <When ms={h.last_seen_ms} />
      </td>
      <td>
        <div class="actions">
          {h.status === "active" ? (
            <Action
              action={`/console/computers/${h.id}/suspend`}
              csrf={props.ctx.csrf}
              label="Suspend"
              name={`Suspend ${h.hostname} (${h.id})`}
              danger
            />
          ) : (
            <Action
              action={`/console/computers/${h.id}/resume`}
              csrf={props.ctx.csrf}
              label="Resume"
              name={`Resume ${h.hostname} (${h.id})`}
            />
          )}
          <a class="button" href={`/console/computers/${h.id}/remove`} aria-label={`Remove ${h.hostname} (${h.id})`}>
            Remove…
          </a>
        </div>
      </td>
    </tr>
  );
}

/**
 * Enrolled computers (duplicate names called out, each removable after a confirmation), the ones
 * removed, and the enrollment token generator (its `tacho enroll` line is shown once).
 */
export function ComputersPage(props: {
  ctx: PageContext;
  hosts: HostView[];
  server: string;
  workspace: string;
  minted: Minted | null;
  error: string | null;
  notice: { text: string; bad: boolean } | null;
}) {
  const enrolled = props.hosts
    .filter((h) => h.status !== "unenrolled")
    .sort((a, b) => a.hostname.localeCompare(b.hostname) || b.enrolled_ms - a.enrolled_ms);
  const removed = props.hosts.filter((h) => h.status === "unenrolled");
  const shared = sharedNames(enrolled);
  return (
    <Layout title="Computers" here="/console/computers" ctx={props.ctx}>
      <h1>Computers</h1>
      {props.notice ? (
        <p class={props.notice.bad ? "notice bad" : "notice"} role="status">
          {props.notice.text}
        </p>
      ) : null}
      {shared.size > 0 ? (
        <div class="notice bad">
          <p>
            <strong>Computers with the same name.</strong> A computer enrolled twice shows up twice. Keep the one still in use (the one seen
            last) and remove the others; their runs stay.
          </p>
          <ul class="plain">
            {[...shared].map(([name, list]) => (
              <li>
                {plural(list.length, "computer")} named <strong>{name}</strong>:{" "}
                {list.map((h, i) => (
                  <>
                    {i > 0 ? ", " : ""}
                    <code>{h.id}</code> (last seen <When ms={h.last_seen_ms} />)
                  </>
                ))}
              </li>
            ))}
          </ul>
        </div>
      ) : null}
      <table>
        <Head cols={["Computer", "Host id", "Key id", "Status", "Enrolled", "Last seen", "Actions"]} />
        <tbody>
          {enrolled.map((h) => (
            <Row ctx={props.ctx} h={h} twins={(shared.get(h.hostname)?.length ?? 1) - 1} />
          ))}
        </tbody>
      </table>
      {enrolled.length === 0 ? <p class="muted">No computer is enrolled yet.</p> : null}
      {removed.length > 0 ? (
        <details>
          <summary>Removed computers ({removed.length})</summary>
          <table>
            <Head cols={["Computer", "Host id", "Enrolled", "Removed"]} />
            <tbody>
              {removed.map((h) => (
                <tr>
                  <th scope="row">{h.hostname}</th>
                  <td class="mono">{h.id}</td>
                  <td>
                    <When ms={h.enrolled_ms} />
                  </td>
                  <td>
                    <When ms={h.unenrolled_ms} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </details>
      ) : null}
      <h2 id="enroll">Enroll a computer</h2>
      {props.minted ? (
        <div class="notice" role="status">
          <p>
            Paste this on the computer to enroll. It is shown only now; the token works once, until <When ms={props.minted.expires_ms} />.
            {props.minted.harnesses.length === 0
              ? " It wraps no harness: the computer records custom agents (tacho hook --agent NAME)."
              : ""}
          </p>
          <pre>{`tacho enroll --server ${props.server} --token ${props.minted.token} --workspace ${props.workspace}${props.minted.harnesses.length > 0 ? ` --harness ${props.minted.harnesses.join(",")}` : ""}`}</pre>
        </div>
      ) : null}
      {props.error ? (
        <p class="field-error" role="alert">
          {props.error}
        </p>
      ) : null}
      <form method="post" action="/console/computers/enrollment-tokens">
        <input type="hidden" name="csrf" value={props.ctx.csrf} />
        <fieldset>
          <legend>Harnesses to wrap on that computer</legend>
          {HARNESSES.map((h) => (
            <label>
              <input type="checkbox" name="harness" value={h} checked={h === "claude-code"} /> {h}
            </label>
          ))}
        </fieldset>
        <label for="ttl">Token valid for (minutes)</label>
        <input id="ttl" name="ttl_minutes" type="number" min="1" max="10080" value="60" required />{" "}
        <button type="submit">Make an enrollment token</button>
      </form>
    </Layout>
  );
}

/** The confirmation before a computer is removed: what removing does, and the one button that does it. */
export function RemoveComputerPage(props: { ctx: PageContext; host: HostView }) {
  const h = props.host;
  return (
    <Layout title={`Remove ${h.hostname}`} here="/console/computers" ctx={props.ctx}>
      <p>
        <a href="/console/computers">← Computers</a>
      </p>
      <h1>
        Remove {h.hostname} <code class="muted">{h.id}</code>?
      </h1>
      <ul>
        <li>The computer is unenrolled: from now on the server refuses every request its key signs, and its push connection is closed.</li>
        <li>
          Its recorded runs stay, and can still be read and exported (<a href={`/console/runs?host=${h.id}`}>its runs</a>).
        </li>
        <li>
          To record on it again, enroll it anew with an enrollment token. On the computer itself, <code>tacho unenroll</code> removes the
          hooks.
        </li>
      </ul>
      <p>
        Enrolled <When ms={h.enrolled_ms} />, last seen <When ms={h.last_seen_ms} />.
      </p>
      <div class="actions">
        <Action
          action={`/console/computers/${h.id}/remove`}
          csrf={props.ctx.csrf}
          label={`Remove ${h.hostname}`}
          name={`Remove ${h.hostname} (${h.id}) for good`}
          danger
        />
        <a class="button" href="/console/computers">
          Keep it
        </a>
      </div>
    </Layout>
  );
}
