// The collector's folders match its processes and depend one way (issue 22): lib <- harnesses <-
// recorder <- gateway <- daemon <- commands <- bin/main. A folder that imports one above it (the
// gateway importing the daemon, the recorder importing the gateway, lib importing anything of the
// collector) makes a cycle, and this test names it.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../../collector");

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path);
    return /\.(?:ts|cjs|js)$/.test(name) && !name.endsWith(".d.ts") ? [path] : [];
  });
}

/** Every relative module a file names: static and dynamic imports, re-exports, requires (comments left out). */
function specifiers(path: string): string[] {
  const text = readFileSync(path, "utf8")
    .replace(/\/\*[\s\S]*?\*\//g, "")
    .replace(/^\s*\/\/.*$/gm, "");
  const found = text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|\brequire\s*\(\s*|^\s*import\s+)"(\.{1,2}\/[^"]+)"/gm);
  return [...found].map((m) => m[1]!);
}

/** The collector's top folder a path is in (`main.ts` and `entry.ts` are entry points, with bin/). */
function folderOf(path: string): string {
  const [top, ...rest] = relative(ROOT, path).split("/");
  return rest.length === 0 ? "entry" : top === "bin" ? "entry" : top!;
}

/** Folder -> the folders its files import. */
function folderGraph(): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const file of files(ROOT)) {
    const from = folderOf(file);
    const edges = graph.get(from) ?? new Set<string>();
    graph.set(from, edges);
    for (const spec of specifiers(file)) {
      const target = resolve(dirname(file), spec);
      if (!target.startsWith(`${ROOT}/`)) continue;
      const to = folderOf(target);
      if (to !== from) edges.add(to);
    }
  }
  return graph;
}

/** A cycle of the graph as a path (its first node again at the end); null when it has none. */
function cycleOf(graph: Map<string, Set<string>>): string[] | null {
  const state = new Map<string, "open" | "done">();
  const path: string[] = [];
  const visit = (n: string): string[] | null => {
    if (state.get(n) === "done") return null;
    if (state.get(n) === "open") return [...path.slice(path.indexOf(n)), n];
    state.set(n, "open");
    path.push(n);
    for (const m of graph.get(n) ?? []) {
      const found = visit(m);
      if (found) return found;
    }
    path.pop();
    state.set(n, "done");
    return null;
  };
  for (const n of graph.keys()) {
    const found = visit(n);
    if (found) return found;
  }
  return null;
}

describe("the collector's folders", () => {
  it("import each other one way: no cycle between them", () => {
    expect(cycleOf(folderGraph())).toBeNull();
  });

  it("in the order of the processes: lib, harnesses, recorder, gateway, daemon, commands", () => {
    const graph = folderGraph();
    const order = ["lib", "harnesses", "recorder", "gateway", "daemon", "commands", "entry"];
    for (const [from, edges] of graph) {
      for (const to of edges) expect(order.indexOf(to), `${from} imports ${to}`).toBeLessThan(order.indexOf(from));
    }
  });

  it("one folder per command: each command main.ts names loads commands/<its name>/index.ts", () => {
    const main = readFileSync(join(ROOT, "main.ts"), "utf8");
    const loads = [
      ...main.matchAll(/"?([a-z-]+)"?: \{\s*summary: "[^"]*",\s*load: \(\) => command\(import\("\.\/commands\/([^"]+)"\)/g),
    ].map((m) => [m[1], m[2]]);
    expect(loads.length).toBeGreaterThan(20);
    for (const [name, module] of loads) expect(module, `${name} loads ${module}`).toBe(`${name}/index.ts`);
  });

  it("finds a cycle where there is one (the check itself)", () => {
    const graph = new Map([
      ["recorder", new Set(["gateway"])],
      ["gateway", new Set(["recorder"])],
    ]);
    expect(cycleOf(graph)).toEqual(["recorder", "gateway", "recorder"]);
    expect(specifiers(join(ROOT, "gateway/model/sink.ts"))).toContain("../../recorder/decide.ts");
  });
});
