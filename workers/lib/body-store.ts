/**
 * Where R2 keeps a recorded body: per workspace, by its SHA-256, so one tenant never learns from
 * "already present" what another one holds. The upload route writes there and the console reads there.
 */
export function bodyKey(workspaceId: string, sha256: string): string {
  return `bodies/${workspaceId}/${sha256}`;
}
