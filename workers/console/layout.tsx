/** @jsxImportSource hono/jsx */
import type { Child } from "hono/jsx";
import { SIGN_OUT } from "./session.ts";

const NAV = [
  ["/console", "Wrapped agents"],
  ["/console/runs", "Runs"],
  ["/console/spend", "Spend"],
  ["/console/tools", "Tools"],
  ["/console/computers", "Computers"],
  ["/console/policy", "Policy"],
] as const;

/** What every signed-in page knows of its operator. */
export interface PageContext {
  workspaceId: string;
  tokenId: string;
  scope: "admin" | "read";
  csrf: string;
}

/** The page shell: skip link, navigation, sign-out, and the page's main content. */
export function Layout(props: { title: string; here: string; ctx?: PageContext; children?: Child }) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="same-origin" />
        <title>{`${props.title} · Oxagen`}</title>
        <link rel="stylesheet" href="/console/style.css" />
      </head>
      <body>
        <a class="skip" href="#main">
          Skip to content
        </a>
        <header>
          <a class="brand" href="/console">
            Oxagen
          </a>
          {props.ctx ? (
            <nav aria-label="Console">
              <ul>
                {NAV.map(([href, label]) => (
                  <li>
                    <a href={href} aria-current={props.here === href ? "page" : undefined}>
                      {label}
                    </a>
                  </li>
                ))}
              </ul>
            </nav>
          ) : null}
          {props.ctx ? (
            <div class="who">
              <span>
                workspace <code>{props.ctx.workspaceId}</code> · token <code>{props.ctx.tokenId}</code> ({props.ctx.scope})
              </span>
              <form class="inline" method="post" action={SIGN_OUT}>
                <input type="hidden" name="csrf" value={props.ctx.csrf} />
                <button type="submit">Sign out</button>
              </form>
            </div>
          ) : null}
        </header>
        <main id="main">{props.children}</main>
      </body>
    </html>
  );
}

/** A table's header row: one column header a name. */
export function Head(props: { cols: string[] }) {
  return (
    <thead>
      <tr>
        {props.cols.map((c) => (
          <th scope="col">{c}</th>
        ))}
      </tr>
    </thead>
  );
}

/** A state word with its colour; the word itself carries the meaning. */
export function State(props: { value: string }) {
  return <span class={`state state-${props.value.replace(/[^a-z_]/g, "")}`}>{props.value.replaceAll("_", " ")}</span>;
}

/** A time as UTC, or a dash. */
export function When(props: { ms: number | null | undefined }) {
  if (props.ms === null || props.ms === undefined) return <span class="muted">—</span>;
  const iso = new Date(props.ms).toISOString();
  return <time datetime={iso}>{iso.replace("T", " ").replace(/\.\d+Z$/, "Z")}</time>;
}

export { plural } from "../../protocol/words.ts";

/** Milliseconds as a duration a person reads: 850 ms, 12 s, 4 min 10 s, 2 h 5 min. */
export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "—";
  if (ms < 1000) return `${ms} ms`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min${s % 60 ? ` ${s % 60} s` : ""}`;
  const h = Math.floor(m / 60);
  return `${h} h${m % 60 ? ` ${m % 60} min` : ""}`;
}

/** Millionths of a US dollar as dollars (one formatter, shared with the API's sentences). */
export { formatUsd as usd } from "../../protocol/index.ts";

/** A POST button carrying the session's CSRF token. */
export function Action(props: {
  action: string;
  csrf: string;
  label: string;
  /** The button's accessible name when its visible label is not unique on the page. */
  name?: string;
  danger?: boolean;
  hidden?: Record<string, string>;
}) {
  return (
    <form class="inline" method="post" action={props.action}>
      <input type="hidden" name="csrf" value={props.csrf} />
      {Object.entries(props.hidden ?? {}).map(([k, v]) => (
        <input type="hidden" name={k} value={v} />
      ))}
      <button type="submit" class={props.danger ? "danger" : undefined} aria-label={props.name}>
        {props.label}
      </button>
    </form>
  );
}
