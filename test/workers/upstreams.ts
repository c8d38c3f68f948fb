// The workers project's global setup (runs in Node): the local tool upstreams, their addresses
// handed to the tests (`inject("toolUpstreams")`); workerd reaches them over loopback.
import type { TestProject } from "vitest/node";
import { startToolUpstreams } from "../support/tool-upstreams.ts";
import "./provided.ts";

export default async function setup(project: TestProject) {
  const upstreams = await startToolUpstreams();
  project.provide("toolUpstreams", { http: upstreams.http, mcp: upstreams.mcp });
  return upstreams.close;
}
