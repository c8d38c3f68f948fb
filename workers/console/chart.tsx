/** @jsxImportSource hono/jsx */
import { usd } from "./layout.tsx";

const W = 720;
const H = 180;
const PAD = { top: 24, right: 8, bottom: 28, left: 8 };

/** The UTC days from `fromDay` through `toDay` (YYYY-MM-DD), in order. */
export function daysBetween(fromDay: string, toDay: string): string[] {
  const out: string[] = [];
  for (let t = Date.parse(`${fromDay}T00:00:00Z`); t <= Date.parse(`${toDay}T00:00:00Z`); t += 86_400_000)
    out.push(new Date(t).toISOString().slice(0, 10));
  return out;
}

/**
 * Spend by day as an inline SVG bar chart, drawn on the server: no script, nothing to load, so
 * the CSP stays `default-src 'none'`. Colours come from the stylesheet (classes, no inline style).
 * Each bar carries its figure in a `<title>`; the table beside the chart holds the same figures.
 */
export function SpendByDayChart(props: { days: string[]; microusd: Map<string, number>; title: string }) {
  const max = Math.max(0, ...props.days.map((d) => props.microusd.get(d) ?? 0));
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const slot = plotW / Math.max(1, props.days.length);
  const barW = Math.max(1, slot * 0.7);
  const first = props.days[0] ?? "";
  const last = props.days.at(-1) ?? "";
  return (
    <svg class="chart" viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby="spend-chart-title" xmlns="http://www.w3.org/2000/svg">
      <title id="spend-chart-title">{props.title}</title>
      <line class="axis" x1={PAD.left} x2={W - PAD.right} y1={H - PAD.bottom} y2={H - PAD.bottom} />
      {props.days.map((d, i) => {
        const v = props.microusd.get(d) ?? 0;
        // A day with spend is at least a pixel tall, so it never reads as none.
        const h = max === 0 || v === 0 ? 0 : Math.max(1, (v / max) * plotH);
        return (
          <rect
            class="bar"
            x={(PAD.left + i * slot + (slot - barW) / 2).toFixed(1)}
            y={(H - PAD.bottom - h).toFixed(1)}
            width={barW.toFixed(1)}
            height={h.toFixed(1)}
          >
            <title>{`${d}: ${usd(v)}`}</title>
          </rect>
        );
      })}
      <text class="label" x={PAD.left} y={H - 8}>
        {first}
      </text>
      <text class="label" x={W - PAD.right} y={H - 8} text-anchor="end">
        {last}
      </text>
      <text class="label" x={PAD.left} y={14}>
        {`highest day ${usd(max)}`}
      </text>
    </svg>
  );
}
