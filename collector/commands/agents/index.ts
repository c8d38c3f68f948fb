import { AgentName, plural } from "../../../protocol/index.ts";
import { parse } from "../../lib/args.ts";
import { UsageError } from "../../lib/errors.ts";
import { EXIT, EXIT_HELP, operatorApi, printJson, propagationText, table, when } from "../../lib/operator.ts";

export const USAGE = `usage: oxagen agents [--json]
       oxagen agents pause|resume NAME [--host ID] [--json]
       oxagen agents register NAME [--ttl-minutes N] [--json]

The Wrapped agents panel (GET /v1/agents): every harness and custom agent on every computer, with
its health and why, and the registered custom agents.

  pause NAME       refuse the next tool call and prompt of every session of NAME, on every computer
                   of the workspace, or on one with --host; returns once the recorders applied it
  resume NAME      lift the pause (with --host: on that computer only)
  register NAME    register a custom agent and print the one-time token and the exact
                   oxagen agent enroll command for the computer that will run it (shown once)
  --host ID        one computer (oxagen computers lists them)
  --ttl-minutes N  how long the registration's token works (default 1440, at most 10080)
  --json           print the API's answer

${EXIT_HELP}`;

interface Agent {
  host_id: string;
  name: string;
  kind: string;
  health: string;
  reason: string;
  paused: boolean;
  paused_where: string | null;
}
interface Registered {
  name: string;
  hosts: string[];
  health: string | null;
  reason: string;
  created_ms: number;
}

export async function agents(args: string[]): Promise<number> {
  const { values, positionals } = parse("oxagen agents", args, {
    host: { type: "string" },
    "ttl-minutes": { type: "string" },
    json: { type: "boolean", default: false },
  });
  const [sub, name, ...extra] = positionals;
  if (sub === undefined) return list(values.json ?? false);
  if (!["pause", "resume", "register"].includes(sub)) throw new UsageError(`oxagen agents: unknown subcommand "${sub}"\n${USAGE}`);
  if (name === undefined || extra.length > 0) throw new UsageError(`oxagen agents ${sub}: name exactly one agent\n${USAGE}`);
  if (!AgentName.safeParse(name).success)
    throw new UsageError(`oxagen agents ${sub}: ${name} is not an agent name (^[a-z0-9][a-z0-9._-]{0,63}$)`);
  const program = `oxagen agents ${sub}`;
  const api = operatorApi(program);
  if (sub === "register") {
    const ttl = values["ttl-minutes"];
    if (ttl !== undefined && !/^\d+$/.test(ttl)) throw new UsageError(`${program}: --ttl-minutes takes a whole number of minutes`);
    const r = await api.json<{ name: string; created: boolean; command: string; expires_ms: number }>("/v1/agents", {
      body: { name, ...(ttl !== undefined ? { ttl_minutes: Number(ttl) } : {}) },
    });
    if (values.json) printJson(r);
    else
      process.stdout.write(
        `${r.created ? "registered" : "registered already; a token for one more computer:"} ${r.name}\nRun this on the computer that will run it (shown only now; the token works once, until ${when(r.expires_ms)}):\n  ${r.command}\nThen wrap each step with: tacho hook --agent ${r.name}\n`,
      );
    return EXIT.ok;
  }
  const answer = await api.json<{ paused: boolean; propagation?: Parameters<typeof propagationText>[0] }>(`/v1/agents/${name}/${sub}`, {
    body: values.host !== undefined ? { host: values.host } : {},
  });
  if (values.json) printJson(answer);
  else {
    const where = values.host !== undefined ? `on ${values.host}` : "across the workspace";
    const still = sub === "resume" && answer.paused ? " (still paused: a workspace-wide pause applies)" : "";
    process.stdout.write(`${sub === "pause" ? "paused" : "resumed"} ${name} ${where}${still}: ${propagationText(answer.propagation)}`);
  }
  return EXIT.ok;
}

async function list(json: boolean): Promise<number> {
  const api = operatorApi("oxagen agents");
  const [answer, hosts] = await Promise.all([
    api.allPages<"agents", { agents: Agent[]; registered: Registered[] }>("/v1/agents", "agents"),
    api.allPages<"hosts", { hosts: { id: string; hostname: string; status: string }[] }>("/v1/hosts", "hosts"),
  ]);
  if (json) {
    printJson(answer);
    return EXIT.ok;
  }
  const names = new Map(hosts.hosts.map((h) => [h.id, h]));
  const shown = answer.agents.filter((a) => names.get(a.host_id)?.status !== "unenrolled");
  process.stdout.write(
    table(
      ["COMPUTER", "AGENT", "KIND", "HEALTH", "WHY", "PAUSED"],
      shown.map((a) => [
        names.get(a.host_id)?.hostname ?? a.host_id,
        a.name,
        a.kind,
        a.health.replaceAll("_", " "),
        a.reason,
        a.paused ? (a.paused_where ?? "yes") : "no",
      ]),
    ),
  );
  if (answer.registered.length > 0) {
    process.stdout.write("\nregistered custom agents:\n");
    process.stdout.write(
      table(
        ["AGENT", "HEALTH", "WHY", "REGISTERED"],
        answer.registered.map((r) => [r.name, r.health ?? plural(r.hosts.length, "computer"), r.reason, when(r.created_ms)]),
      ),
    );
  }
  return EXIT.ok;
}
