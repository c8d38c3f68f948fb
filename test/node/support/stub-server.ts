import { createServer, type IncomingMessage, type Server } from "node:http";
import {
  bytesToHex,
  defaultPolicy,
  EnrollRequest,
  fromHex,
  requestProblem,
  ROUTES,
  signPolicy,
  AUTH_HEADERS,
  type Policy,
} from "../../../protocol/index.ts";
import { SERVER_KEY_ID, SERVER_PUBLIC, SERVER_SECRET } from "../../support/sample-run.ts";

export const STUB_TOKEN = `oxe_0123456789abcdef_${"5".repeat(48)}`;
export const STUB_WORKSPACE = "ws_stub";

/** A stand-in for the Worker's /v1/enroll and /v1/policy, built from the protocol functions. */
export interface StubServer {
  url: string;
  enrollCalls: number;
  policy: Policy;
  close(): Promise<void>;
}

function body(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks)));
  });
}

export async function startStub(): Promise<StubServer> {
  const hosts = new Map<string, string>();
  let next = 1;
  const stub: StubServer = { url: "", enrollCalls: 0, policy: defaultPolicy(STUB_WORKSPACE, 1_767_225_600_000), close: async () => {} };
  const server: Server = createServer(async (req, res) => {
    const send = (status: number, json: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(json));
    };
    const raw = await body(req);
    if (req.method === "POST" && req.url === ROUTES.enroll) {
      stub.enrollCalls++;
      const parsed = EnrollRequest.safeParse(JSON.parse(raw.toString("utf8")));
      if (!parsed.success) return send(400, { error: "invalid_request", message: "bad enroll request" });
      if (parsed.data.token !== STUB_TOKEN)
        return send(401, { error: "invalid_token", message: "The enrollment token is unknown, expired or already used." });
      const hostId = `h-stub-${next++}`;
      hosts.set(hostId, parsed.data.public_key);
      return send(201, {
        host_id: hostId,
        workspace: STUB_WORKSPACE,
        server_key: { pub: bytesToHex(SERVER_PUBLIC), key_id: SERVER_KEY_ID },
      });
    }
    if (req.method === "GET" && req.url === ROUTES.policy) {
      const hostId = String(req.headers[AUTH_HEADERS.host] ?? "");
      const pub = hosts.get(hostId);
      const header = (name: string) => (typeof req.headers[name] === "string" ? (req.headers[name] as string) : null);
      const problem = pub
        ? requestProblem(
            fromHex(pub, 32),
            {
              host: header(AUTH_HEADERS.host),
              time: header(AUTH_HEADERS.time),
              nonce: header(AUTH_HEADERS.nonce),
              signature: header(AUTH_HEADERS.signature),
            },
            { origin: stub.url, method: "GET", pathAndQuery: ROUTES.policy, headers: {}, body: new Uint8Array() },
            Date.now(),
          )
        : "unknown host";
      if (problem) return send(401, { error: "bad_signature", message: problem });
      return send(200, signPolicy({ ...stub.policy, host: hostId }, SERVER_SECRET, SERVER_KEY_ID));
    }
    send(404, { error: "not_found", message: "no such route" });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  stub.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  stub.close = () => new Promise((r) => server.close(() => r()));
  return stub;
}
