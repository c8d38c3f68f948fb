/** A command handler the collector wrote for a harness: `<tacho> hook --harness NAME` (the program may be a path ending in tacho or tacho.js). */
export function commandMarker(harness: string): RegExp {
  return new RegExp(`(?:^|[\\s/\\\\"'])tacho(?:\\.js)?["']? hook --harness ${harness.replace(/[.]/g, "\\.")}(?:\\s|$)`);
}

/** True for a handler object whose `command` carries the marker (whatever its other fields). */
export function hasCommand(handler: unknown, marker: RegExp): boolean {
  if (handler === null || typeof handler !== "object") return false;
  const command = (handler as Record<string, unknown>).command;
  return typeof command === "string" && marker.test(command);
}
