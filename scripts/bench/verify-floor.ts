// The floor of `npm run bench:verify`: the least any verifier of a version-2 bundle must do, on
// one thread or shared with a second the way `oxagen verify` shares its work. It reads the file,
// hashes every byte before the signature line, parses each line once (JSON.parse), computes each
// frame's payload hash and frame hash from the bytes and compares it with the one the line
// carries, checks each lock's signature and the bundle's. Nothing else: no layout or Record JSON
// form, no tally, no gap list, no findings.
import { createHash, createPublicKey, hash, type KeyObject, verify } from "node:crypto";
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { Worker } from "node:worker_threads";

const SLOT_BYTES = 2 * 1024 * 1024;
const SLOTS = 6;
const SPKI = Buffer.from("302a300506032b6570032100", "hex");
const FREE = 0;
const PENDING = 1;
const TAKEN = 2;
const DONE = 3;
// Control words: wake-up counter, stop flag, the worker's count of what did not check out, then
// per slot: state and where its complete lines end.
const WAKE = 0;
const STOP = 1;
const BAD = 2;
const word = (slot: number, field: 0 | 1) => 3 + slot * 2 + field;

export const edKey = (pub: Uint8Array): KeyObject => createPublicKey({ key: Buffer.concat([SPKI, pub]), format: "der", type: "spki" });

/** What checking blocks needs: the chain id and the host key (from the head line). */
export interface FloorContext {
  chain: Buffer;
  hostKey: KeyObject;
}

const PAYLOAD = Buffer.from('"payload":');
const P_TAG = Buffer.from("oxagen/payload/v1\0");
const F_TAG = Buffer.from("oxagen/frame/v1\0");
const DSSE_TYPE = "application/vnd.oxagen.lock.v1+json";

/** Checks the complete lines of `buf[0 … end)`; `prev` is the hash the frame before carries. Returns the frames whose hash differs. */
export function checkBlock(buf: Buffer, end: number, prev: Buffer, ctx: FloorContext): number {
  let bad = 0;
  const scratch = Buffer.alloc(70_000 * 3 + P_TAG.length);
  P_TAG.copy(scratch);
  const header = Buffer.alloc(F_TAG.length + 2 + ctx.chain.length + 8 + 32 + 8 + 1 + 255 + 32);
  let h = F_TAG.copy(header);
  h = header.writeUInt16BE(ctx.chain.length, h);
  h += ctx.chain.copy(header, h);
  const seqAt = h;
  const prevAt = seqAt + 8;
  prev.copy(header, prevAt);
  for (let at = 0; at < end; ) {
    const lf = buf.indexOf(10, at);
    const v = JSON.parse(buf.toString("utf8", at, lf));
    if (v.seq !== undefined) {
      // The digests the format defines, from the bytes: the payload's, then the frame's header.
      const p = buf.indexOf(PAYLOAD, at) + PAYLOAD.length;
      const n = buf.copy(scratch, P_TAG.length, p, lf - 1);
      const ph = hash("sha256", scratch.subarray(0, P_TAG.length + n), "binary");
      header.writeUInt32BE(Math.floor(v.seq / 2 ** 32), seqAt);
      header.writeUInt32BE(v.seq >>> 0, seqAt + 4);
      let k = prevAt + 32;
      header.writeUInt32BE(Math.floor(v.t / 2 ** 32), k);
      header.writeUInt32BE(v.t >>> 0, k + 4);
      k += 8;
      const kind = header.write(v.kind, k + 1, "latin1");
      header[k] = kind;
      k += 1 + kind;
      k += header.write(ph, k, "latin1");
      if (hash("sha256", header.subarray(0, k), "hex") !== v.hash) bad++;
      header.write(v.hash, prevAt, "hex");
    } else if (v.lock) {
      const body = Buffer.from(v.lock.payload);
      const pae = Buffer.from(`DSSEv1 ${DSSE_TYPE.length} ${DSSE_TYPE} ${body.length} `);
      if (!verify(null, Buffer.concat([pae, body]), ctx.hostKey, Buffer.from(v.lock.sig, "hex"))) bad++;
    }
    at = lf + 1;
  }
  return bad;
}

/** The hash the last frame line of `buf[0 … end)` carries (the link into the next block), or null when it holds none. */
function lastHash(buf: Buffer, end: number): Buffer | null {
  const start = buf.lastIndexOf(10, end - 2) + 1;
  if (buf[start + 2] !== 0x73) return null; // {"seq":…
  return Buffer.from(JSON.parse(buf.toString("utf8", start, end - 1)).hash, "hex");
}

/** Runs the floor over the bundle at `path` on 1 or 2 threads; returns the frames and locks that did not check out (0 for a good bundle). */
export function floor(path: string, serverKey: Uint8Array, threads: 1 | 2): number {
  const fd = openSync(path, "r");
  const size = fstatSync(fd).size;
  const tail = Buffer.alloc(Math.min(size, 512));
  readSync(fd, tail, 0, tail.length, size - tail.length);
  const sigStart = size - tail.length + tail.lastIndexOf(10, tail.length - 2) + 1;
  const signature = JSON.parse(tail.toString("utf8", sigStart - (size - tail.length))).signature;
  const digest = createHash("sha256");
  const slots = Array.from({ length: SLOTS }, () => Buffer.from(new SharedArrayBuffer(SLOT_BYTES)));
  const prevs = Buffer.from(new SharedArrayBuffer(32 * SLOTS));
  const control = new Int32Array(new SharedArrayBuffer(4 * (3 + 2 * SLOTS)));
  let ctx: FloorContext | null = null;
  let worker: Worker | null = null;
  let bad = 0;
  const order: number[] = [];
  const run = (slot: number) => {
    bad += checkBlock(slots[slot]!, control[word(slot, 1)]!, prevs.subarray(32 * slot, 32 * slot + 32), ctx!);
    Atomics.store(control, word(slot, 0), FREE);
  };
  const settle = (slot: number) => {
    if (Atomics.compareExchange(control, word(slot, 0), PENDING, TAKEN) === PENDING) return run(slot);
    // Taken by the worker: it marks it DONE when it is through.
    while (Atomics.load(control, word(slot, 0)) === TAKEN) Atomics.wait(control, word(slot, 0), TAKEN);
    Atomics.store(control, word(slot, 0), FREE);
  };
  let position = 0;
  let carry = Buffer.alloc(0);
  let prev: Buffer = Buffer.alloc(32);
  for (let k = 0; position < sigStart; k = (k + 1) % SLOTS) {
    if (Atomics.load(control, word(k, 0)) !== FREE) settle(k);
    const slot = slots[k]!;
    carry.copy(slot);
    const n = readSync(fd, slot, carry.length, Math.min(SLOT_BYTES - carry.length, sigStart - position), position);
    digest.update(slot.subarray(carry.length, carry.length + n));
    position += n;
    const end = slot.lastIndexOf(10, carry.length + n - 1) + 1;
    carry = Buffer.from(slot.subarray(end, carry.length + n));
    if (!ctx) {
      const head = JSON.parse(slot.toString("utf8", 0, slot.indexOf(10)));
      ctx = { chain: Buffer.from(head.run.id), hostKey: edKey(Buffer.from(head.host_key.pub, "hex")) };
      prev = createHash("sha256")
        .update(Buffer.concat([Buffer.from("oxagen/genesis/v1\0"), Buffer.from([0, ctx.chain.length]), ctx.chain]))
        .digest();
      if (threads === 2)
        worker = new Worker(new URL("./verify-floor-worker.ts", import.meta.url), { workerData: { slots, prevs, control, head } });
    }
    prev.copy(prevs, 32 * k);
    control[word(k, 1)] = end;
    prev = lastHash(slot, end) ?? prev;
    if (!worker) {
      run(k);
      continue;
    }
    order.splice(0, order.length, ...order.filter((s) => Atomics.load(control, word(s, 0)) !== FREE), k);
    Atomics.store(control, word(k, 0), PENDING);
    Atomics.add(control, WAKE, 1);
    Atomics.notify(control, WAKE);
    const waiting = order.filter((s) => Atomics.load(control, word(s, 0)) === PENDING);
    if (waiting.length >= 2 && Atomics.compareExchange(control, word(waiting[0]!, 0), PENDING, TAKEN) === PENDING) run(waiting[0]!);
  }
  for (let k = 0; k < SLOTS; k++) if (Atomics.load(control, word(k, 0)) !== FREE) settle(k);
  if (worker) {
    Atomics.store(control, STOP, 1);
    Atomics.notify(control, WAKE);
    void (worker as Worker).terminate();
  }
  closeSync(fd);
  bad += Atomics.load(control, BAD);
  const input = Buffer.concat([Buffer.from("oxagen/bundle/v2\0"), digest.digest()]);
  if (!verify(null, input, edKey(serverKey), Buffer.from(signature.sig, "hex"))) bad++;
  return bad;
}

/** The shared words the floor's worker reads. */
export const FLOOR_WORDS = { PENDING, TAKEN, DONE, WAKE, STOP, BAD, SLOTS, word };
