// Runs `oxagen` with the given arguments in this process, then writes its exit code and peak
// resident memory (KB, every thread included) to stderr as JSON: the benchmarks read them.
// The peak is VmHWM from /proc (Linux): getrusage's maxRSS would also count the pages of the
// parent that forked this process, which for a benchmark is hundreds of megabytes.
import { readFileSync } from "node:fs";
import { main } from "../../collector/main.ts";

const exit = await main("oxagen", process.argv.slice(2));
let maxRss = process.resourceUsage().maxRSS;
try {
  maxRss = Number(/VmHWM:\s+(\d+)/.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? maxRss);
} catch {}
process.stderr.write(`\n${JSON.stringify({ exit, maxRss })}`);
process.exitCode = exit;
