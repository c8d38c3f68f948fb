// npm run bench:redact — findCredentials on 1 MiB bodies crafted to be dense with candidate
// credentials, against the floor measured in the same run: one pass of every detector's own regular
// expression over the same text (what any scanner built on them pays), with nothing checked or
// merged. The last column is findCredentials at 4× the size over the time at 1×: 4 is linear.
import { performance } from "node:perf_hooks";
import { CREDENTIAL_PATTERNS, findCredentials } from "../../protocol/redact.ts";

const SIZE = Number(process.env.BENCH_BYTES ?? 1024 * 1024);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const HOSTILE = ['token="', "bearer aaaaaaaaaaaaaaaaaaaa ", 'api_key="', "eyJaaaaa.", "token=", "x://a:b@", "INFO request handled\n"];
function best(fn: () => void): number {
  let min = Number.POSITIVE_INFINITY;
  for (let i = 0; i < ROUNDS; i++) {
    const start = performance.now();
    fn();
    min = Math.min(min, performance.now() - start);
  }
  return min;
}

const rows: string[][] = [];
for (const unit of HOSTILE) {
  const text = unit.repeat(Math.ceil(SIZE / unit.length)).slice(0, SIZE);
  const work = { steps: 0 };
  let found = 0;
  const ms = best(() => {
    work.steps = 0;
    found = findCredentials(text, work).length;
  });
  const floor = best(() => {
    for (const re of CREDENTIAL_PATTERNS) for (const _m of text.matchAll(re));
  });
  const big = unit.repeat(Math.ceil((4 * SIZE) / unit.length)).slice(0, 4 * SIZE);
  const bigMs = best(() => findCredentials(big));
  rows.push([
    JSON.stringify(unit),
    String(found),
    String(work.steps),
    ms.toFixed(0),
    floor.toFixed(0),
    (ms / floor).toFixed(2),
    (bigMs / ms).toFixed(1),
  ]);
}
const head = ["body (repeated to 1 MiB)", "credentials", "merge steps", "findCredentials ms", "floor ms", "ratio", "4 MiB / 1 MiB"];
const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
const line = (r: string[]) => r.map((c, i) => c.padStart(widths[i]!)).join("  ");
console.log(`${line(head)}\n${rows.map(line).join("\n")}`);
