// The tamper corpus run against the server's lock intake: the verifier's cases (test/protocol/
// tamper-corpus.test.ts) sent as the computer would send them, and the locks the server stores
// checked with the verifier's own lock check against the frames it stores. The two sides must
// agree: the server stores no lock the verifier would flag, and refuses a set of locks exactly
// when the verifier finds a problem in it (taken in lock_seq order, as the intake takes them).
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import {
  frameSchemaProblem,
  genesisHash,
  parseLock,
  readLock,
  runIdFor,
  type SignedLock,
  SignedLock as SignedLockSchema,
  verifyLocks,
} from "../../protocol/index.ts";
import { AGENT, HOST_PUBLIC, HOST_SECRET } from "../support/sample-run.ts";
import { TAMPER_CASES, tamperCorpus } from "../support/tamper-cases.ts";
import { enrollHost, ingest, seedWorkspace, type TestHost } from "./support.ts";

let host: TestHost;

beforeAll(async () => {
  const { token } = await seedWorkspace();
  host = await enrollHost(token, HOST_SECRET, [AGENT]);
});

/** The cases that edit the record itself, each on a run of its own (a session per case). */
const CASES = TAMPER_CASES.flatMap((c, i) => (c.received ? [[c.name, i] as const] : []));

/** The locks a chain's intake is offered, as it takes them: in lock_seq order, an identical one once. */
function offered(locks: readonly SignedLock[]): SignedLock[] {
  return [...new Map(locks.map((l) => [l.payload, l])).values()].sort((a, b) => parseLock(a).lock_seq - parseLock(b).lock_seq);
}

// Problems that are no reason to refuse a lock: a lock's time going back is only a note.
const refusing = (problems: { code: string }[]) => problems.filter((p) => p.code !== "LOCK_TIME_REGRESSION");

describe("the tamper corpus against the server's lock intake", () => {
  it("has record-editing cases to run", () => {
    expect(CASES.length).toBeGreaterThan(30);
  });

  it.each(CASES)("%s", async (name, i) => {
    const session = `tamper-${i}`;
    const c = tamperCorpus({ host: { id: host.id, secret: HOST_SECRET }, session }).cases[i]!;
    expect(c.name).toBe(name);
    const sent = c.received!();
    const chain = runIdFor(host.id, AGENT, session);
    const locks = sent.locks.map(({ payload, sig }) => ({ payload, sig }));
    const frames = sent.frames.map(({ seq, t, kind, payload }) => ({ seq, t, kind, payload }));
    const res = await ingest(host, [{ chain, run: { harness: AGENT, agent: AGENT, session_id: session }, frames, locks }]);
    const stub = env.CHAINS.get(env.CHAINS.idFromName(chain));
    const malformed =
      locks.some((l) => !SignedLockSchema.safeParse(l).success || readLock(l).problem !== null) ||
      frames.some((f) => frameSchemaProblem(f) !== null);
    if (malformed) {
      // A lock (or frame) that is not one is refused with its whole batch: nothing is stored.
      expect(res.status).toBe(400);
      expect(await stub.summary()).toBeNull();
      return;
    }
    expect(res.status).toBe(200);
    const ack = res.body.chains[0] as { held: number; locks_stored: number };
    const stored = (await stub.frames(0, 1000)).frames;
    const page = await stub.exportPage({ section: "locks", from: 0, to: 1000 });
    const storedLocks = page.lines
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => (JSON.parse(l) as { lock: SignedLock }).lock);
    const against = {
      chainId: chain,
      hostId: host.id,
      frameCount: stored.length,
      frameHash: (index: number) => stored[index]!.hash,
      genesis: genesisHash(chain),
      hostKey: HOST_PUBLIC,
    };
    // What the server stored, the verifier accepts.
    expect(refusing(verifyLocks(storedLocks, against).problems)).toEqual([]);
    // What the verifier accepts, the server stores; what it does not, the server does not take whole.
    const offer = offered(locks);
    const finalWithHeld = ack.held > 0 && offer.some((l) => parseLock(l).final);
    const clean = refusing(verifyLocks(offer, against).problems).length === 0 && !finalWithHeld;
    expect(ack.locks_stored === offer.length, JSON.stringify(res.body.chains[0])).toBe(clean);
    expect(storedLocks.length).toBe(ack.locks_stored);
  });
});
