/** @jsxImportSource hono/jsx */
import type { CoverageStatement } from "../../../protocol/index.ts";
import { Layout, type PageContext, Head } from "../layout.tsx";

/** A run's coverage statement (protocol `coverageStatement`, the same one the API and `oxagen verify` give). */
export function CoveragePage(props: { ctx: PageContext; run: string; statement: CoverageStatement }) {
  const s = props.statement;
  return (
    <Layout title={`Coverage of ${props.run}`} here="/console/runs" ctx={props.ctx}>
      <p>
        <a href={`/console/runs/${props.run}`}>← Run {props.run}</a>
      </p>
      <h1>Coverage statement</h1>
      <p>{s.summary}</p>
      <h2>Recorded by</h2>
      {s.paths.length === 0 ? (
        <p>No path: the record holds no frame.</p>
      ) : (
        <table>
          <Head cols={["Path", "Frames", "What it is"]} />
          <tbody>
            {s.paths.map((p) => (
              <tr>
                <th scope="row">{p.path}</th>
                <td>{p.frames}</td>
                <td>{p.what}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h2>What the record holds</h2>
      <table>
        <Head cols={["Action", "Frame", "Count"]} />
        <tbody>
          {s.holds.map((h) => (
            <tr>
              <th scope="row">{h.action}</th>
              <td class="mono">{h.frame}</td>
              <td>{h.count}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Model calls and spend</h2>
      <p>{s.model_calls}</p>
      <h2>Hooks</h2>
      <p>{s.hooks}</p>
      <h2>Gaps</h2>
      {s.gaps.length === 0 ? (
        <p>The record lists no gap.</p>
      ) : (
        <ul>
          {s.gaps.map((g) => (
            <li>
              <code>{g.kind}</code>
              {g.count > 1 ? ` × ${g.count}` : ""}
            </li>
          ))}
        </ul>
      )}
      <h2>What no path saw</h2>
      <ul>
        {s.not_seen.map((n) => (
          <li>{n}</li>
        ))}
      </ul>
      <p class="muted">
        The same statement: <code>GET /v1/runs/{props.run}/coverage</code>, and printed by <code>oxagen verify</code> next to its result.
      </p>
    </Layout>
  );
}
