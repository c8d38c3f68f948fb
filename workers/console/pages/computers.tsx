/** @jsxImportSource hono/jsx */
import { Action, Layout, type PageContext, State, When, Head } from "../layout.tsx";

type HostView = { id: string; hostname: string; key_id: string; status: string; enrolled_ms: number; last_seen_ms: number | null };

/** Enrolled computers, and the enrollment token generator (its `tacho enroll` line is shown once). */
export function ComputersPage(props: {
  ctx: PageContext;
  hosts: HostView[];
  server: string;
  workspace: string;
  minted: { token: string; expires_ms: number } | null;
  error: string | null;
}) {
  return (
    <Layout title="Computers" here="/console/computers" ctx={props.ctx}>
      <h1>Computers</h1>
      <table>
        <Head cols={["Computer", "Host id", "Key id", "Status", "Enrolled", "Last seen", "Action"]} />
        <tbody>
          {props.hosts.map((h) => (
            <tr>
              <th scope="row">{h.hostname}</th>
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
                {h.status === "active" ? (
                  <Action
                    action={`/console/computers/${h.id}/suspend`}
                    csrf={props.ctx.csrf}
                    label="Suspend"
                    name={`Suspend ${h.hostname} (${h.id})`}
                    danger
                  />
                ) : h.status === "suspended" ? (
                  <Action
                    action={`/console/computers/${h.id}/resume`}
                    csrf={props.ctx.csrf}
                    label="Resume"
                    name={`Resume ${h.hostname} (${h.id})`}
                  />
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {props.hosts.length === 0 ? <p class="muted">No computer is enrolled yet.</p> : null}
      <h2 id="enroll">Enroll a computer</h2>
      {props.minted ? (
        <div class="notice" role="status">
          <p>
            Paste this on the computer to enroll. It is shown only now; the token works once, until <When ms={props.minted.expires_ms} />.
          </p>
          <pre>{`tacho enroll --server ${props.server} --token ${props.minted.token} --workspace ${props.workspace} --harness claude-code,codex,cursor,stella`}</pre>
        </div>
      ) : null}
      {props.error ? (
        <p class="field-error" role="alert">
          {props.error}
        </p>
      ) : null}
      <form method="post" action="/console/computers/enrollment-tokens">
        <input type="hidden" name="csrf" value={props.ctx.csrf} />
        <label for="ttl">Token valid for (minutes)</label>
        <input id="ttl" name="ttl_minutes" type="number" min="1" max="10080" value="60" required />{" "}
        <button type="submit">Make an enrollment token</button>
      </form>
    </Layout>
  );
}
