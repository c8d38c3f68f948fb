// Writes the known-answer vectors in test/vectors/ from the RFC 8032 test keys, so they
// reproduce byte for byte. `--check` regenerates them in memory and fails if any file differs.
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sampleVectors } from "../test/support/sample-run.ts";

const dir = join(import.meta.dirname, "../test/vectors");
const check = process.argv.includes("--check");
const files = sampleVectors();
let stale = 0;
for (const [name, content] of Object.entries(files)) {
  const path = join(dir, name);
  if (check) {
    let current: string | null = null;
    try {
      current = readFileSync(path, "utf8");
    } catch {}
    if (current !== content) {
      stale++;
      process.stderr.write(`stale: test/vectors/${name}\n`);
    }
  } else {
    mkdirSync(join(path, ".."), { recursive: true });
    writeFileSync(path, content);
  }
}
if (check) {
  const bodies = new Set(
    Object.keys(files)
      .filter((n) => n.startsWith("bodies/"))
      .map((n) => n.slice(7)),
  );
  for (const name of readdirSync(join(dir, "bodies"))) {
    if (!bodies.has(name)) {
      stale++;
      process.stderr.write(`not generated: test/vectors/bodies/${name}\n`);
    }
  }
  process.stdout.write(
    stale ? `${stale} vector files are stale: run npm run vectors\n` : `vectors current (${Object.keys(files).length} files)\n`,
  );
  process.exitCode = stale ? 1 : 0;
} else {
  process.stdout.write(`wrote ${Object.keys(files).length} files to test/vectors\n`);
}
