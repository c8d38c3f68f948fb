// Runs `oxagen` with the given arguments in this process, then writes its exit code and peak
// resident memory (KB, every thread included) to stderr as JSON: bench:verify reads them.
import { main } from "../../collector/main.ts";

const exit = await main("oxagen", process.argv.slice(2));
process.stderr.write(`\n${JSON.stringify({ exit, maxRss: process.resourceUsage().maxRSS })}`);
process.exitCode = exit;
