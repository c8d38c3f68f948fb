// A long run put into a Worker the way a computer ships it: the sample run (sample-run.ts) padded to
// `frames` frames, a lock every 100, signed ingest batches of 5,000 with their locks, then the bodies
// it names, so its export lists no missing body and verifies complete. Shared by the export bench
// and the large-export test: the collector's own hooks would take far longer to make as many frames.
import { bytesToHex, encodeUpload, type Frame, runIdFor, type SignedLock, utf8 } from "../../protocol/index.ts";
import { hostFetch } from "../../scripts/bench/host-fetch.ts";
import { AGENT, BODIES, HOST_PUBLIC, HOST_SECRET, SESSION, sampleSteps } from "./sample-run.ts";

const BATCH = 5000;
const ROLES = {
  prompt: "prompt",
  toolInput: "tool_input",
  toolOutput: "tool_output",
  message: "message",
  llmRequest: "llm_request",
  llmResponse: "llm_response",
} as const;

/** Enrolls the sample host (its fixed key) with a fresh enrollment token from `operatorToken`. */
export async function enrollSampleHost(url: string, operatorToken: string, hostname: string): Promise<{ id: string; secret: Uint8Array }> {
  const made = await fetch(`${url}/v1/enrollment-tokens`, {
    method: "POST",
    headers: { authorization: `Bearer ${operatorToken}`, "content-type": "application/json" },
    body: "{}",
  });
  const { token } = (await made.json()) as { token: string };
  const enrolled = await fetch(`${url}/v1/enroll`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token, public_key: bytesToHex(HOST_PUBLIC), hostname, harnesses: [AGENT] }),
  });
  if (enrolled.status !== 201) throw new Error(`enroll answered ${enrolled.status} ${await enrolled.text()}`);
  return { id: ((await enrolled.json()) as { host_id: string }).host_id, secret: HOST_SECRET };
}

/** Ships the padded sample run and its bodies; answers its run id and the frames sent. */
export async function shipSampleRun(
  url: string,
  host: { id: string; secret: Uint8Array },
  frames: number,
  onBatch: (sent: number) => void = () => {},
): Promise<{ chain: string; frames: number }> {
  const chain = runIdFor(host.id, AGENT, SESSION);
  let batch: Frame[] = [];
  let locks: SignedLock[] = [];
  let sent = 0;
  const send = async () => {
    const body = Buffer.from(
      JSON.stringify({ chains: [{ chain, run: { harness: AGENT, agent: AGENT, session_id: SESSION }, frames: batch, locks }] }),
    );
    const res = await hostFetch(url, host, "POST", "/v1/ingest", { "content-type": "application/json" }, body);
    const ack = ((await res.json()) as { chains?: { status: string }[] }).chains?.[0];
    if (res.status !== 200 || ack?.status !== "accepted") throw new Error(`ingest answered ${res.status} ${JSON.stringify(ack)}`);
    sent += batch.length;
    batch = [];
    locks = [];
    onBatch(sent);
  };
  for (const { frame, lock } of sampleSteps({ lockEvery: 100, extraToolCalls: Math.max(0, Math.ceil((frames - 6) / 4)), host })) {
    if (frame) batch.push({ seq: frame.seq, t: frame.t, kind: frame.kind, payload: frame.payload });
    if (lock) locks.push({ payload: lock.payload, sig: lock.sig });
    if (batch.length >= BATCH) await send();
  }
  await send();
  // The bodies in one upload, as the recorder ships them.
  const upload = encodeUpload(Object.entries(ROLES).map(([name, role]) => ({ role, bytes: utf8(BODIES[name as keyof typeof BODIES]) })));
  const res = await hostFetch(
    url,
    host,
    "POST",
    "/v1/bodies",
    { "x-oxagen-run": chain, "content-type": upload.contentType },
    Buffer.from(upload.bytes),
  );
  const results = res.status === 200 ? ((await res.json()) as { results: { status: string }[] }).results : [];
  if (results.length !== Object.keys(ROLES).length || results.some((r) => r.status !== "stored" && r.status !== "duplicate"))
    throw new Error(`body upload answered ${res.status} ${JSON.stringify(results)}`);
  return { chain, frames: sent };
}
