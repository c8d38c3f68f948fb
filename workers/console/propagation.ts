import { HostId } from "../../protocol/index.ts";
import type { NotApplied, Propagation } from "../lib/push.ts";
import { plural } from "./layout.tsx";

const WHY = ["offline", "slow", "push_failed"] as const;
const SAYS: Record<NotApplied["why"], string> = {
  offline: "offline: it applies the change when it connects again",
  slow: "connected, but its recorder did not confirm in time: it applies the change at its next fetch",
  push_failed: "the change could not be pushed: it applies it at its next poll",
};
/** The most computers a notice names (the rest are counted). */
const NAMED = 10;

/**
 * The query a console action redirects with when its change had not reached every computer: the
 * hosts by id and why (`late=host_a.offline,host_b.slow`), and how many more. Empty when it had.
 */
export function lateQuery(p: Propagation): string {
  if (p.not_applied.length === 0) return "";
  const named = p.not_applied.slice(0, NAMED);
  const more = p.not_applied.length - named.length + p.more;
  const late = named.map((n) => `${n.host_id}.${n.why}`).join(",");
  return `&${new URLSearchParams({ late, ...(more > 0 ? { late_more: String(more) } : {}) })}`;
}

/**
 * The sentence a page shows for a redirect's `late` query, the computers named as the page knows
 * them (`names`: host id to name); an id the page does not know, or a malformed entry, is left out,
 * so the query cannot put words of its own on the page. Null when nothing is late.
 */
export function lateNotice(query: Record<string, string | undefined>, names: Map<string, string>): string | null {
  const named = (query.late ?? "")
    .split(",")
    .slice(0, NAMED)
    .flatMap((e): NotApplied[] => {
      const [id, why] = e.split(".");
      return HostId.safeParse(id).success && names.has(id!) && (WHY as readonly string[]).includes(why ?? "")
        ? [{ host_id: id!, hostname: names.get(id!)!, why: why as NotApplied["why"] }]
        : [];
    });
  return notApplied(named, Math.min(Number.parseInt(query.late_more ?? "0", 10) || 0, 1_000_000));
}

/** The sentence naming the computers a change had not reached (and how many more), or null when it reached all. */
export function notApplied(named: NotApplied[], more: number): string | null {
  const entries = named.slice(0, NAMED).map((n) => `${n.hostname} (${n.host_id}) is ${SAYS[n.why]}`);
  more += Math.max(0, named.length - NAMED);
  if (entries.length === 0 && more === 0) return null;
  const tail = more > 0 ? `${entries.length > 0 ? "; and " : ""}${plural(more, "more computer")} not yet` : "";
  return `Not applied everywhere yet: ${entries.join("; ")}${tail}.`;
}

/** What the Wrapped agents and Computers pages say after each action they redirect with (`done`). */
export const AGENT_DONE: Record<string, string> = {
  agent_paused: "Paused: the agent's next tool call, prompt and session start are refused.",
  agent_resumed: "Resumed.",
  suspended: "Suspended: the computer's next step is refused, and the server refuses its data.",
  resumed: "Resumed: the computer records and ships again.",
  removed: "Removed: the computer is unenrolled; its requests are refused from now on, and its runs stay.",
};

/** The notice for a redirect's `done` and `late` query, or null when it names no action. */
export function actionNotice(
  query: Record<string, string | undefined>,
  done: Record<string, string>,
  names: Map<string, string>,
): { text: string; bad: boolean } | null {
  const said = Object.hasOwn(done, query.done ?? "") ? done[query.done!] : undefined;
  if (!said) return null;
  const late = lateNotice(query, names);
  return { text: late ? `${said} ${late}` : said, bad: late !== null };
}
