/** A duration from the environment (every figure of the recorder can be set for tests), else `fallback`. */
export function envMs(name: string, fallback: number): number {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : fallback;
}
