/** @jsxImportSource hono/jsx */
import { Hono } from "hono";
import { CustomAgentName, REGISTRATION_TTL_MINUTES, registerAgent } from "../lib/registered-agents.ts";
import { EnrollmentTtlMinutes } from "../lib/tokens.ts";
import { checkedForm, pageCtx } from "./context.ts";
import { RegisterAgentPage } from "./pages/register-agent.tsx";
import type { ConsoleEnv } from "./session.ts";

const PAGE = "/console/agents/register";

/** Registering a custom agent in the console: the same rule and the same token as `POST /v1/agents`. */
export const registerAgentConsole = new Hono<ConsoleEnv>()
  .get(PAGE, (c) =>
    c.html(<RegisterAgentPage ctx={pageCtx(c)} registered={null} name="" ttl={String(REGISTRATION_TTL_MINUTES)} error={null} />),
  )
  .post(PAGE, async (c) => {
    const form = checkedForm(c);
    const typed = (form.get("name") ?? "").trim();
    const ttlText = form.get("ttl_minutes") ?? "";
    const name = CustomAgentName.safeParse(typed);
    const ttl = EnrollmentTtlMinutes.safeParse(Number(ttlText));
    const error = !name.success
      ? `"${typed}" cannot be a custom agent's name: it ${name.error.issues[0]?.message === "not an agent name" ? "breaks the naming rule below" : name.error.issues[0]?.message}.`
      : !ttl.success
        ? "Give the token a life of 1 to 10,080 minutes (a week)."
        : null;
    if (error || !name.success || !ttl.success)
      return c.html(<RegisterAgentPage ctx={pageCtx(c)} registered={null} name={typed} ttl={ttlText} error={error} />, 400);
    const registered = await registerAgent(c.env, c.var.workspaceId, c.var.tokenId, name.data, ttl.data);
    return c.html(
      <RegisterAgentPage ctx={pageCtx(c)} registered={registered} name="" ttl={String(REGISTRATION_TTL_MINUTES)} error={null} />,
      registered.created ? 201 : 200,
    );
  });
