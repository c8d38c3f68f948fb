// A browser for the console's tests in workerd: it keeps the cookies the console sets, sends them
// back, and never follows a redirect.
import { exports } from "cloudflare:workers";
import { expect } from "vitest";
import { BASE } from "./support.ts";

/** A browser: keeps the cookies the console sets, sends them back, never follows redirects. */
export class Browser {
  readonly jar = new Map<string, string>();
  setCookies: string[] = [];
  readonly base: string;
  constructor(base = BASE) {
    this.base = base;
  }

  async fetch(path: string, init: { method?: string; form?: Record<string, string | string[]>; headers?: Record<string, string> } = {}) {
    const headers: Record<string, string> = { ...(init.headers ?? {}) };
    if (this.jar.size > 0) headers.cookie = [...this.jar].map(([k, v]) => `${k}=${v}`).join("; ");
    let body: string | undefined;
    if (init.form) {
      const p = new URLSearchParams();
      for (const [k, v] of Object.entries(init.form)) for (const one of Array.isArray(v) ? v : [v]) p.append(k, one);
      body = p.toString();
      headers["content-type"] = "application/x-www-form-urlencoded";
    }
    const res = await exports.default.fetch(`${this.base}${path}`, {
      method: init.method ?? (init.form ? "POST" : "GET"),
      headers,
      body,
      redirect: "manual",
    });
    this.setCookies = res.headers.getSetCookie();
    for (const c of this.setCookies) {
      const [pair] = c.split(";");
      const [name, value] = pair!.split("=") as [string, string];
      if (/Max-Age=0/i.test(c) || value === "") this.jar.delete(name);
      else this.jar.set(name, value);
    }
    return res;
  }

  async page(path: string) {
    const res = await this.fetch(path);
    return { res, html: await res.text() };
  }

  /** The CSRF token of the first form on a page. */
  static csrf(html: string): string {
    return /name="csrf" value="([0-9a-f]+)"/.exec(html)?.[1] ?? "";
  }

  async signIn(operatorToken: string) {
    const { html } = await this.page("/console/sign-in");
    const res = await this.fetch("/console/sign-in", { form: { csrf: Browser.csrf(html), token: operatorToken } });
    expect(res.status).toBe(303);
    return res;
  }
}

export async function signedIn(operatorToken: string, base = BASE) {
  const b = new Browser(base);
  await b.signIn(operatorToken);
  return b;
}

export async function csrfOf(b: Browser, path = "/console") {
  return Browser.csrf((await b.page(path)).html);
}
