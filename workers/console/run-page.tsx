/** @jsxImportSource hono/jsx */
import { bytesToHex } from "../../protocol/index.ts";
import { AppError } from "../errors.ts";
import { signingKey } from "../keys.ts";
import { budgetUseOf } from "../lib/budget-use.ts";
import { bodyKey } from "../lib/body-store.ts";
import { ownRun, runDetail } from "../lib/runs.ts";
import type { PageContext } from "./layout.tsx";
import { BodyPage } from "./pages/body.tsx";
import { RunPage } from "./pages/run.tsx";
import { failedCall, type FrameRowView, fields } from "./pages/timeline.tsx";
import { actionNotice } from "./propagation.ts";

/** Frames per timeline page (a run's, and a computer's own chain). */
export const TIMELINE_PAGE = 200;
const BODY_SHOWN_BYTES = 256 * 1024;
/** Failed model calls per page whose vendor answer is read for its message (one R2 read each). */
const VENDOR_ANSWERS = 10;
const VENDOR_ANSWER_BYTES = 8 * 1024;

const DONE: Record<string, string> = {
  paused: "Paused: the run's next hook is refused.",
  resumed: "Resumed.",
  sealed: "Sealed: the record is locked with the server's key and the agent stopped.",
};

type BodyRef = { role: string; sha256: string; size: number; kept: boolean; why?: string };

function bodyRef(payload: string, i: number): BodyRef | null {
  const refs = fields(payload).bodies;
  const ref = Array.isArray(refs) ? (refs[i] as BodyRef | undefined) : undefined;
  return ref && typeof ref.sha256 === "string" && /^[0-9a-f]{64}$/.test(ref.sha256) ? ref : null;
}

/** What a vendor's error answer says (Anthropic's and OpenAI's shapes), in at most 300 characters. */
function vendorMessage(text: string): string | undefined {
  try {
    const v = JSON.parse(text) as { error?: { message?: unknown; type?: unknown } | string; message?: unknown };
    const e = v.error;
    const m = typeof e === "string" ? e : typeof e?.message === "string" ? e.message : typeof v.message === "string" ? v.message : null;
    return m ? m.slice(0, 300) : undefined;
  } catch {
    return undefined;
  }
}

/** What the vendor said for each failed model call on the page whose answer the workspace kept (bounded reads). */
async function vendorAnswers(env: Env, workspaceId: string, frames: FrameRowView[]): Promise<Map<number, string>> {
  const failed = frames
    .filter((fr) => failedCall(fr.kind, fields(fr.payload)))
    .flatMap((fr) => {
      const i = (fields(fr.payload).bodies ?? []).findIndex((b) => b.role === "llm_response" && b.kept === true);
      const ref = i >= 0 ? bodyRef(fr.payload, i) : null;
      return ref ? [{ seq: fr.seq, sha256: ref.sha256 }] : [];
    })
    .slice(0, VENDOR_ANSWERS);
  const said = await Promise.all(
    failed.map(async ({ seq, sha256 }) => {
      const obj = await env.BODIES.get(bodyKey(workspaceId, sha256), { range: { offset: 0, length: VENDOR_ANSWER_BYTES } });
      const message = obj ? vendorMessage(new TextDecoder().decode(await obj.arrayBuffer())) : undefined;
      return [seq, message] as const;
    }),
  );
  return new Map(said.filter((s): s is readonly [number, string] => s[1] !== undefined));
}

/** A run's page: its facts, actions, gaps and a page of its timeline. */
export async function runPage(env: Env, ctx: PageContext, id: string, query: Record<string, string>) {
  const row = await ownRun(env, ctx.workspaceId, id);
  const from = Math.max(0, Number.parseInt(query.from ?? "0", 10) || 0);
  const [detail, frames, key, budgets] = await Promise.all([
    runDetail(env, row),
    env.CHAINS.get(env.CHAINS.idFromName(row.id)).frames(from, TIMELINE_PAGE),
    signingKey(env),
    budgetUseOf(env, ctx.workspaceId, { onlyHost: row.hostId, onlyRun: row.id }),
  ]);
  const notice = actionNotice(query, DONE, new Map([[row.hostId, row.hostname ?? row.hostId]]));
  return (
    <RunPage
      ctx={ctx}
      run={row}
      paused={detail.paused}
      heldFrames={detail.heldFrames}
      gaps={detail.gaps}
      frames={frames.frames}
      from={from}
      next={frames.next}
      serverKey={{ keyId: key.keyId, pub: bytesToHex(key.pub) }}
      notice={notice}
      byModel={detail.byModel}
      budgets={budgets}
      vendorSaid={await vendorAnswers(env, ctx.workspaceId, frames.frames)}
    />
  );
}

/** One body of a frame of the run: its text from R2 (the first 256 KiB), or why it is not shown. */
export async function bodyPage(env: Env, ctx: PageContext, id: string, seq: number, i: number) {
  const row = await ownRun(env, ctx.workspaceId, id);
  const page = await env.CHAINS.get(env.CHAINS.idFromName(row.id)).frames(seq, 1);
  const frame = page.frames[0];
  const ref = frame?.seq === seq ? bodyRef(frame.payload, i) : null;
  if (!ref) throw new AppError(404, "not_found", "No such body: the frame names no body at that place.");
  let text: string | null = null;
  let why: string | null = null;
  let truncated = false;
  if (!ref.kept)
    why = `Not kept: ${ref.why === "over_limit" ? "over the 1 MiB limit" : ref.why === "digest_only" ? "the workspace keeps digests only" : "the workspace's retention does not keep this role"}.`;
  else {
    const obj = await env.BODIES.get(bodyKey(ctx.workspaceId, ref.sha256), { range: { offset: 0, length: BODY_SHOWN_BYTES } });
    if (!obj) why = "The computer kept this body, but the server has not received it (see the run's missing_bodies gap, if it ended).";
    else {
      text = new TextDecoder().decode(await obj.arrayBuffer());
      truncated = obj.size > BODY_SHOWN_BYTES;
    }
  }
  return (
    <BodyPage
      ctx={ctx}
      run={row.id}
      seq={seq}
      role={ref.role}
      sha256={ref.sha256}
      size={ref.size}
      text={text}
      why={why}
      truncated={truncated}
    />
  );
}
