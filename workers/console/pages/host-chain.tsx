/** @jsxImportSource hono/jsx */
import { Layout, type PageContext } from "../layout.tsx";
import { type FrameRowView, Timeline } from "./timeline.tsx";

/** A computer's own chain: what it recorded outside every run (read-only, never exported). */
export function HostChainPage(props: { ctx: PageContext; hostId: string; frames: FrameRowView[]; from: number; next: number | null }) {
  const chain = `host_${props.hostId}`;
  return (
    <Layout title={`Computer ${props.hostId}: its own chain`} here="/console/computers" ctx={props.ctx}>
      <h1>
        Computer <code>{props.hostId}</code>: its own chain
      </h1>
      <p class="muted">
        What the computer recorded outside every run: model calls the gateway could not tie to a session (reserved and priced like any
        other), sessions that ran without hooks. Not part of any run's record or export bundle.
      </p>
      <Timeline frames={props.frames} run={null} vendorSaid={new Map()} />
      {props.frames.length === 0 ? <p class="muted">The computer's own chain holds no frame yet.</p> : null}
      <p>
        {props.from > 0 ? <a href={`/console/runs/${chain}?from=${Math.max(0, props.from - 200)}`}>← Earlier frames</a> : null}{" "}
        {props.next !== null ? <a href={`/console/runs/${chain}?from=${props.next}`}>Later frames →</a> : null}
      </p>
    </Layout>
  );
}
