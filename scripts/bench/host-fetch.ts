// A host-signed request to the Worker, as the recorder sends one: the signed headers are sent with
// exactly the values signed. Shared by the benches that play a computer.
import { signRequest } from "../../protocol/index.ts";

export function hostFetch(
  url: string,
  host: { id: string; secret: Uint8Array },
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body: Uint8Array<ArrayBuffer> = new Uint8Array(),
): Promise<Response> {
  const signed = signRequest(host.secret, { origin: url, method, pathAndQuery: path, hostId: host.id, headers, body });
  return fetch(`${url}${path}`, { method, headers: { ...headers, ...signed }, body: body.length > 0 ? body : undefined });
}
