// The entry the bundle in dist/ is built from (scripts/build-collector.ts): the recorder daemon
// runs from that bundle, so it neither loads the TypeScript stripper nor parses the sources.
import { main } from "./main.ts";

process.exitCode = await main("tacho", process.argv.slice(2));
