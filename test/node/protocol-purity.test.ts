import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const dir = join(import.meta.dirname, "../../protocol");
const files = readdirSync(dir).filter((f) => f.endsWith(".ts"));

describe("protocol/ stays pure", () => {
  it.each(files)("%s imports nothing from node:* or cloudflare:*, and uses no Node globals", (file) => {
    const text = readFileSync(join(dir, file), "utf8");
    expect(text).not.toMatch(/from\s+["'](?:node:|cloudflare:)/);
    expect(text).not.toMatch(/import\(\s*["'](?:node:|cloudflare:)/);
    expect(text).not.toMatch(/\b(?:Buffer|process|require)\s*[.(]/);
  });

  it("puts JSDoc on every export", () => {
    const missing: string[] = [];
    for (const file of files) {
      const lines = readFileSync(join(dir, file), "utf8").split("\n");
      lines.forEach((line, i) => {
        if (!/^export (?:const|function|class|type|interface|async function)/.test(line)) return;
        let j = i - 1;
        while (j >= 0 && lines[j]!.trim() === "") j--;
        if (!lines[j]!.trim().endsWith("*/")) missing.push(`${file}:${i + 1} ${line.slice(0, 60)}`);
      });
    }
    expect(missing).toEqual([]);
  });
});
