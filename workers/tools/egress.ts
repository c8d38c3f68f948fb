/**
 * Where a tool may send a request (SSRF): https to a public address only. `OXAGEN_TOOLS_ALLOW_LOOPBACK`
 * = "1" (wrangler dev and tests only; "0" in wrangler.toml) also lets http:// and loopback through.
 * Names are checked as written: the Workers runtime does not let a Worker resolve a name first, and
 * Cloudflare's edge does not route a Worker's fetch to private addresses (docs/operations.md).
 */

/** Whether the loopback allowance is on for this deployment. */
export function loopbackAllowed(env: Pick<Env, "OXAGEN_TOOLS_ALLOW_LOOPBACK">): boolean {
  return String(env.OXAGEN_TOOLS_ALLOW_LOOPBACK) === "1";
}

function ipv4(host: string): number[] | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  return m ? m.slice(1).map(Number) : null;
}

function publicIpv4([a, b]: number[]): boolean {
  if (a === 0 || a === 10 || a === 127 || a! >= 224) return false;
  if (a === 100 && b! >= 64 && b! < 128) return false; // shared (CGNAT)
  if (a === 169 && b === 254) return false; // link-local
  if (a === 172 && b! >= 16 && b! < 32) return false;
  if (a === 192 && (b === 168 || b === 0)) return false;
  if (a === 198 && (b === 18 || b === 19)) return false; // benchmarking
  return true;
}

const isLoopback = (host: string) => host === "localhost" || host.endsWith(".localhost") || host === "[::1]" || ipv4(host)?.[0] === 127;

/** Why a tool may not send a request to this URL, or null when it may. */
export function egressProblem(url: URL, allowLoopback: boolean): string | null {
  if (url.username || url.password) return "the URL carries credentials; give the tool a credential instead";
  const host = url.hostname.toLowerCase();
  if (allowLoopback && isLoopback(host) && (url.protocol === "http:" || url.protocol === "https:")) return null;
  if (url.protocol !== "https:") return "a tool calls https:// only";
  if (host.startsWith("[")) {
    // Only global unicast (2000::/3), which no mapped, local or link-local address is in.
    return /^\[[23][0-9a-f]{0,3}:/.test(host) ? null : "the address is not a public one";
  }
  const v4 = ipv4(host);
  if (v4) return publicIpv4(v4) ? null : "the address is not a public one";
  if (!host.includes(".") || /\.(localhost|local|internal|lan|home\.arpa|corp)$/.test(host) || host === "localhost")
    return "the name is not a public one";
  return null;
}

/**
 * A fetch for tool calls: every URL checked with {@link egressProblem}, redirects not followed
 * (a 3xx is answered as it came, so a redirect cannot lead past the check).
 */
export function guardedFetch(allowLoopback: boolean): typeof fetch {
  return async (input, init) => {
    const request = new Request(input, init);
    const problem = egressProblem(new URL(request.url), allowLoopback);
    if (problem) throw new EgressRefused(problem);
    return fetch(request, { redirect: "manual" });
  };
}

/** A request a tool may not send. */
export class EgressRefused extends Error {
  override readonly name = "EgressRefused";
}
