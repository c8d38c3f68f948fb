// What the workers project's global setup (upstreams.ts) hands its tests.
declare module "vitest" {
  export interface ProvidedContext {
    toolUpstreams: { http: string; mcp: string };
  }
}
export {};
