/** A run with no frame for this long (server clock) is closed with outcome unknown (its object's alarm, `chain-object.ts`). */
export const QUIET_MS = 12 * 60 * 60_000;
