/** @jsxImportSource hono/jsx */
import { Layout } from "../layout.tsx";

/** Sign-in: paste an operator token once; the browser keeps a session cookie, never the token. */
export function SignInPage(props: { csrf: string; notice: string; error: string | null; next: string | null }) {
  return (
    <Layout title="Sign in" here="">
      <h1>Sign in to the Oxagen console</h1>
      {props.notice ? (
        <p class="notice" role="status">
          {props.notice}
        </p>
      ) : null}
      <form method="post" action="/console/sign-in">
        <input type="hidden" name="csrf" value={props.csrf} />
        {props.next ? <input type="hidden" name="next" value={props.next} /> : null}
        <label for="token">Operator token</label>
        <input
          id="token"
          name="token"
          type="password"
          autocomplete="off"
          spellcheck={false}
          size={72}
          required
          aria-describedby={props.error ? "token-error" : "token-help"}
        />
        {props.error ? (
          <p class="field-error" id="token-error" role="alert">
            {props.error}
          </p>
        ) : null}
        <p class="muted" id="token-help">
          An <code>oxo_…</code> token (<code>npm start</code> prints one for local dev). It is checked once; the browser keeps only a
          session, which ends when you sign out, after 12 hours, or when the token is revoked.
        </p>
        <button type="submit">Sign in</button>
      </form>
    </Layout>
  );
}

const HEADINGS: Record<number, string> = { 400: "Not valid", 403: "Refused", 404: "Not found", 409: "Not possible now", 413: "Too large" };

/** An error page: the status and one sentence. */
export function ErrorPage(props: { status: number; message: string; signedIn: boolean }) {
  return (
    <Layout title={`Error ${props.status}`} here="">
      <h1>{HEADINGS[props.status] ?? (props.status >= 500 ? "Something went wrong" : "Refused")}</h1>
      <p class="notice bad" role="alert">
        {props.message}
      </p>
      <p>
        <a href="/console">Back to the console</a>
      </p>
    </Layout>
  );
}
