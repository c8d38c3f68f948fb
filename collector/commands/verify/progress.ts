/** A progress bar on a TTY that appears only once the work has taken more than a second. */
export function progressBar(stream: NodeJS.WriteStream, delayMs = 1000) {
  const start = Date.now();
  let shown = false;
  return {
    update: (fraction: number) => {
      if (!stream.isTTY || Date.now() - start < delayMs) return;
      shown = true;
      const width = 30;
      const filled = Math.round(Math.max(0, Math.min(1, fraction)) * width);
      stream.write(`\r[${"#".repeat(filled)}${" ".repeat(width - filled)}] ${Math.round(fraction * 100)}%`);
    },
    done: () => {
      if (shown) stream.write("\r\x1b[K");
    },
  };
}
