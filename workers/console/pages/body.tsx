/** @jsxImportSource hono/jsx */
import { Layout, type PageContext } from "../layout.tsx";

/** A JSON value's size as a person reads it. */
function size(v: unknown): string {
  const n = (JSON.stringify(v) ?? "").length;
  return n < 1024 ? `${n} characters` : `${(n / 1024).toFixed(1)} KiB`;
}

/** What names an element of a list (a message's role, a block's type, a tool's name). */
function label(v: unknown): string {
  if (!v || typeof v !== "object" || Array.isArray(v)) return "";
  const o = v as Record<string, unknown>;
  return [o.role, o.type, o.name].filter((x): x is string => typeof x === "string").join(" ");
}

const small = (v: unknown) => v === null || typeof v !== "object" || (JSON.stringify(v) ?? "").length <= 120;

/**
 * A JSON value, pretty-printed and folded: each member of an object, and each element of a list
 * below it, is a `<details>` whose summary names it and its size; small values show inline. Two
 * levels fold; below that the value is one indented block.
 */
function Folded(props: { value: unknown; depth: number }) {
  const v = props.value;
  if (small(v) || props.depth >= 2) return <pre>{JSON.stringify(v, null, 2)}</pre>;
  const entries: [string, unknown][] = Array.isArray(v) ? v.map((x, i) => [`[${i}]`, x]) : Object.entries(v as object);
  return (
    <div class="folded">
      {entries.map(([k, x]) =>
        small(x) ? (
          <p class="mono">
            <strong>{k}</strong>: {JSON.stringify(x)}
          </p>
        ) : (
          <details open={props.depth === 0}>
            <summary>
              <strong class="mono">{k}</strong> {label(x)}{" "}
              <span class="muted">
                ({Array.isArray(x) ? `${x.length} items, ` : ""}
                {size(x)})
              </span>
            </summary>
            <Folded value={x} depth={props.depth + 1} />
          </details>
        ),
      )}
    </div>
  );
}

function parsed(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

/** One body of a frame, shown as escaped text: JSON pretty-printed and folded, the raw text beside it (or why it is not shown). */
export function BodyPage(props: {
  ctx: PageContext;
  run: string;
  seq: number;
  role: string;
  sha256: string;
  size: number;
  text: string | null;
  why: string | null;
  truncated: boolean;
}) {
  const json = props.text !== null && !props.truncated ? parsed(props.text) : { ok: false as const };
  return (
    <Layout title={`Body of frame ${props.seq}`} here="/console/runs" ctx={props.ctx}>
      <p>
        <a href={`/console/runs/${props.run}#seq-${props.seq}`}>← Run {props.run}</a>
      </p>
      <h1>
        {props.role} body of frame {props.seq}
      </h1>
      <p class="muted">
        SHA-256 <code>{props.sha256}</code>, {props.size} bytes, after the computer removed credentials.
      </p>
      {props.text === null ? (
        <p class="notice">{props.why}</p>
      ) : json.ok ? (
        <>
          <p class="muted">JSON, pretty-printed; open or close each part.</p>
          <Folded value={json.value} depth={0} />
          <details>
            <summary>The text as stored</summary>
            <pre>{props.text}</pre>
          </details>
        </>
      ) : (
        <>
          {props.truncated ? <p class="notice">The first 256 KiB are shown.</p> : null}
          <pre>{props.text}</pre>
        </>
      )}
    </Layout>
  );
}
