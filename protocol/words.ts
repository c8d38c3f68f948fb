/**
 * A count with its noun, singular for one: "1 lock", "3 locks". Every printed count (the console,
 * `oxagen verify`, the coverage statement's text, the operator CLI) says it this way.
 */
export function plural(n: number, noun: string, nouns = `${noun}s`): string {
  return `${n.toLocaleString("en-US")} ${n === 1 ? noun : nouns}`;
}
