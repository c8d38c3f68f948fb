/** @jsxImportSource hono/jsx */
import type { RegisteredAgent } from "../../lib/registered-agents.ts";
import { Head, Layout, type PageContext, plural, State, When } from "../layout.tsx";

const PAGE = "/console/agents/register";

/** The registered custom agents on the Wrapped agents panel: each idle until a computer enrolled for it calls the hook. */
export function RegisteredAgents(props: { agents: RegisteredAgent[]; admin: boolean }) {
  return (
    <section aria-labelledby="registered">
      <h2 id="registered">Registered custom agents</h2>
      {props.agents.length === 0 ? (
        <p class="muted">
          None yet. {props.admin ? <a href={PAGE}>Register a custom agent</a> : "An admin token registers one"}: its registration gives the
          one-time token its computer enrolls with.
        </p>
      ) : (
        <>
          <table>
            <Head cols={["Agent", "Health", "Why", "Registered"]} />
            <tbody>
              {props.agents.map((a) => (
                <tr>
                  <th scope="row">{a.name}</th>
                  <td>{a.health ? <State value={a.health} /> : plural(a.hosts.length, "computer")}</td>
                  <td>{a.reason}</td>
                  <td>
                    <When ms={a.created_ms} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {props.admin ? (
            <p>
              <a href={PAGE}>Register a custom agent</a>, or one of these again for another computer.
            </p>
          ) : null}
        </>
      )}
    </section>
  );
}

/** What a registration answered: the token, shown once, and the exact command. */
export interface Registered {
  name: string;
  created: boolean;
  command: string;
  expires_ms: number;
}

/** Register a custom agent: its name (the spec's rules) and its token's life; the answer shows the command once. */
export function RegisterAgentPage(props: {
  ctx: PageContext;
  registered: Registered | null;
  name: string;
  ttl: string;
  error: string | null;
}) {
  const r = props.registered;
  return (
    <Layout title="Register a custom agent" here="/console" ctx={props.ctx}>
      <p>
        <a href="/console">← Wrapped agents</a>
      </p>
      <h1>Register a custom agent</h1>
      {r ? (
        <div class="notice" role="status">
          <p>
            {r.created ? `Registered ${r.name}.` : `${r.name} was registered already: here is a token for one more computer.`} Run this on
            the computer that will run it. It is shown only now; the token works once, until <When ms={r.expires_ms} />.
          </p>
          <pre>{r.command}</pre>
          <p>
            Then the agent wraps each step with <code>tacho hook --agent {r.name}</code>. It shows as idle on the Wrapped agents panel until
            it calls the hook.
          </p>
        </div>
      ) : null}
      <form method="post" action={PAGE}>
        <input type="hidden" name="csrf" value={props.ctx.csrf} />
        <label for="agent-name">Agent name</label>
        <input
          id="agent-name"
          name="name"
          value={props.name}
          required
          spellcheck={false}
          autocomplete="off"
          pattern="[a-z0-9][a-z0-9._\-]{0,63}"
          aria-describedby={props.error ? "agent-name-error" : "agent-name-help"}
        />
        {props.error ? (
          <p class="field-error" id="agent-name-error" role="alert">
            {props.error}
          </p>
        ) : null}
        <p class="muted" id="agent-name-help">
          Lower-case letters, digits, <code>.</code>, <code>_</code> and <code>-</code>, up to 64, starting with a letter or digit; not a
          built-in harness name (claude-code, codex, cursor, stella, …). It becomes the runs' harness label.
        </p>
        <label for="agent-ttl">Token valid for (minutes)</label>
        <input id="agent-ttl" name="ttl_minutes" type="number" min="1" max="10080" value={props.ttl} required />{" "}
        <button type="submit">Register and make its token</button>
      </form>
    </Layout>
  );
}
