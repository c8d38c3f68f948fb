/** What a progress bar counts besides the fraction: its unit, and the total when it is known. */
export interface Counted {
  unit: string;
  total?: number;
}

/** How long work runs before its bar appears: a second, so short work never flickers (OXAGEN_PROGRESS_DELAY_MS for another). */
function startDelay(): number {
  const ms = Number(process.env.OXAGEN_PROGRESS_DELAY_MS);
  return Number.isFinite(ms) && ms >= 0 ? ms : 1000;
}

const count = (n: number) => Math.round(n).toLocaleString("en-US");

/**
 * A progress bar on a TTY that appears only once the work has taken more than a second: the
 * fraction done and, given a count, how many of the total (an estimate from the fraction, marked
 * `~`, when the total is not known) and the rate. Silent when the stream is not a terminal.
 */
export function progressBar(stream: NodeJS.WriteStream, delayMs = startDelay(), counted?: Counted) {
  const start = Date.now();
  let shown = false;
  return {
    update: (fraction: number, done?: number) => {
      const elapsed = Date.now() - start;
      if (!stream.isTTY || elapsed < delayMs) return;
      shown = true;
      const width = 30;
      const f = Math.max(0, Math.min(1, fraction));
      const filled = Math.round(f * width);
      let tail = "";
      if (counted && done !== undefined) {
        const total = counted.total !== undefined ? count(counted.total) : f > 0 ? `~${count(done / f)}` : "?";
        const rate = ` · ${count((done * 1000) / Math.max(1, elapsed))} ${counted.unit}/s`;
        tail = ` ${count(done)} of ${total} ${counted.unit}${rate}`;
      }
      stream.write(`\r[${"#".repeat(filled)}${" ".repeat(width - filled)}] ${Math.round(f * 100)}%${tail}\x1b[K`);
    },
    done: () => {
      if (shown) stream.write("\r\x1b[K");
    },
  };
}
