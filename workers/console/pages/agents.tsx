/** @jsxImportSource hono/jsx */
import type { RegisteredAgent } from "../../lib/registered-agents.ts";
import { Action, Layout, type PageContext, State, When, Head } from "../layout.tsx";
import { RegisteredAgents } from "./register-agent.tsx";

type AgentView = {
  host_id: string;
  name: string;
  kind: string;
  health: string;
  reason: string;
  last_seen_ms: number | null;
  last_delivered_ms: number | null;
  pending_since_ms: number | null;
  paused: boolean;
  paused_where: "host" | "workspace" | null;
};
type HostView = { id: string; hostname: string; status: string; last_seen_ms: number | null };

/** The Wrapped agents panel: every harness and custom agent per computer, with its health and why. */
export function AgentsPage(props: {
  ctx: PageContext;
  hosts: { host: HostView; agents: AgentView[] }[];
  pausedEverywhere: string[];
  notice: { text: string; bad: boolean } | null;
  registered: RegisteredAgent[];
}) {
  const all = props.hosts.flatMap((h) => h.agents);
  const counts = new Map<string, number>();
  for (const a of all) counts.set(a.health, (counts.get(a.health) ?? 0) + 1);
  return (
    <Layout title="Wrapped agents" here="/console" ctx={props.ctx}>
      <h1>Wrapped agents</h1>
      <p class="muted">
        Every harness and custom agent on every enrolled computer, with its health as the server sees it. Pausing an agent, on one computer
        or across the workspace, refuses the next tool call and prompt of every session of it and is pushed to the recorders at once; a run
        can be paused from its page, a computer suspended here. A harness never wrapped on a computer has nothing to pause there.
      </p>
      {props.notice ? (
        <p class={props.notice.bad ? "notice bad" : "notice"} role="status">
          {props.notice.text}
        </p>
      ) : null}
      {props.pausedEverywhere.length > 0 ? (
        <section aria-labelledby="paused-everywhere">
          <h2 id="paused-everywhere">Paused across the workspace</h2>
          <ul>
            {props.pausedEverywhere.map((name) => (
              <li>
                <strong>{name}</strong> <AgentAction ctx={props.ctx} name={name} host={null} hostname={null} pause={false} />
              </li>
            ))}
          </ul>
        </section>
      ) : null}
      {all.length === 0 ? (
        <p class="notice">
          No computer is enrolled yet. On the computer, run <code>tacho enroll --server URL</code> and approve its code here, or mint an
          enrollment token on the Computers page.
        </p>
      ) : (
        <p>
          Across the workspace:{" "}
          {[...counts].map(([state, n], i) => (
            <>
              {i > 0 ? ", " : ""}
              {n} <State value={state} />
            </>
          ))}
        </p>
      )}
      {props.hosts.map(({ host, agents }) => (
        <section aria-labelledby={`host-${host.id}`}>
          <h2 id={`host-${host.id}`}>
            {host.hostname} <code class="muted">{host.id}</code> <State value={host.status} />
          </h2>
          <p class="muted">
            last seen <When ms={host.last_seen_ms} />{" "}
            {host.status === "active" ? (
              <Action
                action={`/console/computers/${host.id}/suspend`}
                csrf={props.ctx.csrf}
                label="Suspend this computer"
                name={`Suspend ${host.hostname} (${host.id})`}
                hidden={{ back: "agents" }}
                danger
              />
            ) : host.status === "suspended" ? (
              <Action
                action={`/console/computers/${host.id}/resume`}
                csrf={props.ctx.csrf}
                label="Resume this computer"
                name={`Resume ${host.hostname} (${host.id})`}
                hidden={{ back: "agents" }}
              />
            ) : null}
          </p>
          <table>
            <caption class="muted">Agents on {host.hostname}</caption>
            <Head cols={["Agent", "Kind", "Health", "Why", "Last seen", "Last delivered", "Pending since", "Paused", "Runs"]} />
            <tbody>
              {agents.map((a) => (
                <tr>
                  <th scope="row">{a.name}</th>
                  <td>{a.kind}</td>
                  <td>
                    <State value={a.health} />
                  </td>
                  <td>{a.reason}</td>
                  <td>
                    <When ms={a.last_seen_ms} />
                  </td>
                  <td>
                    <When ms={a.last_delivered_ms} />
                  </td>
                  <td>
                    <When ms={a.pending_since_ms} />
                  </td>
                  <td>
                    {a.paused_where === "workspace" ? (
                      <>
                        <State value="paused" /> across the workspace{" "}
                        <AgentAction ctx={props.ctx} name={a.name} host={null} hostname={null} pause={false} />
                      </>
                    ) : a.paused_where === "host" ? (
                      <>
                        <State value="paused" /> on this computer{" "}
                        <AgentAction ctx={props.ctx} name={a.name} host={host.id} hostname={host.hostname} pause={false} />{" "}
                        <AgentAction ctx={props.ctx} name={a.name} host={null} hostname={null} pause />
                      </>
                    ) : a.health === "not_wrapped" ? (
                      "no"
                    ) : (
                      <>
                        no <AgentAction ctx={props.ctx} name={a.name} host={host.id} hostname={host.hostname} pause />{" "}
                        <AgentAction ctx={props.ctx} name={a.name} host={null} hostname={null} pause />
                      </>
                    )}
                  </td>
                  <td>
                    <a
                      href={`/console/runs?${new URLSearchParams({ host: host.id, agent: a.name })}`}
                      aria-label={`Runs of ${a.name} on ${host.hostname}`}
                    >
                      runs
                    </a>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      ))}
      <RegisteredAgents agents={props.registered} admin={props.ctx.scope === "admin"} />
    </Layout>
  );
}

/** Pause or resume an agent on one computer (`host`) or across the workspace (`host` null). */
function AgentAction(props: { ctx: PageContext; name: string; host: string | null; hostname: string | null; pause: boolean }) {
  const verb = props.pause ? "Pause" : "Resume";
  const where = props.host === null ? "everywhere" : "here";
  const whereLong = props.host === null ? "across the workspace" : `on ${props.hostname} (${props.host})`;
  return (
    <Action
      action={`/console/agents/${props.pause ? "pause" : "resume"}`}
      csrf={props.ctx.csrf}
      label={`${verb} ${where}`}
      name={`${verb} ${props.name} ${whereLong}`}
      hidden={{ name: props.name, host: props.host ?? "" }}
      danger={props.pause}
    />
  );
}
