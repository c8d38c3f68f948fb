// The floor's second thread (see verify-floor.ts): checks blocks as they wait, until told to stop.
import { workerData } from "node:worker_threads";
import { checkBlock, edKey, FLOOR_WORDS } from "./verify-floor.ts";

const { PENDING, TAKEN, DONE, WAKE, STOP, BAD, SLOTS, word } = FLOOR_WORDS;
const { slots, prevs, control, head } = workerData as {
  slots: Buffer[];
  prevs: Buffer;
  control: Int32Array;
  head: { run: { id: string }; host_key: { pub: string } };
};
const blocks = slots.map((s) => Buffer.from(s.buffer, s.byteOffset, s.byteLength));
const prev = Buffer.from(prevs.buffer, prevs.byteOffset, prevs.byteLength);
const ctx = { chain: Buffer.from(head.run.id), hostKey: edKey(Buffer.from(head.host_key.pub, "hex")) };

run();

function run(): void {
  while (Atomics.load(control, STOP) === 0) {
    const wake = Atomics.load(control, WAKE);
    let slot = -1;
    for (let k = 0; k < SLOTS && slot < 0; k++) if (Atomics.compareExchange(control, word(k, 0), PENDING, TAKEN) === PENDING) slot = k;
    if (slot < 0) {
      Atomics.wait(control, WAKE, wake, 1000);
      continue;
    }
    Atomics.add(control, BAD, checkBlock(blocks[slot]!, control[word(slot, 1)]!, prev.subarray(32 * slot, 32 * slot + 32), ctx));
    Atomics.store(control, word(slot, 0), DONE);
    Atomics.notify(control, word(slot, 0));
  }
}
