import { fileURLToPath } from "node:url";

// This module sits one level below the collector's root both in the repo (collector/lib/) and in
// the built package (dist/), so the path to the bin is the same from either.
/** The `tacho` entry point of this collector (collector/bin/tacho.js, or bin/tacho.js when installed). */
export const TACHO_BIN = fileURLToPath(new URL("../bin/tacho.js", import.meta.url));
