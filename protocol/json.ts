/**
 * Record JSON: the one JSON form a frame payload or a lock payload may take.
 *
 * Hashes and signatures cover exact bytes, so the bytes must mean one thing to every parser.
 * Record JSON is a JSON text that (1) holds only objects, arrays, strings, booleans, null and
 * safe integers (|n| <= 2^53 - 1, no fraction, no exponent), (2) has no duplicate member names,
 * (3) has no lone surrogate in any string, and (4) is exactly what ECMAScript `JSON.stringify`
 * prints for its parsed value: no white space, members in their written order, strings escaped
 * as RFC 8785 section 3.2.2.2 says. Rule (4) also rejects duplicate names, because parsing keeps
 * only the last one and the re-serialization then differs from the input. (5) No member name is an
 * array index ("0", "1", ..., "4294967294"): ECMAScript orders such names first, other languages
 * keep them in place, so they could make two verifiers disagree about rule (4).
 * @module
 */

/** A value Record JSON can hold. */
export type RecordJsonValue = string | number | boolean | null | RecordJsonValue[] | { [key: string]: RecordJsonValue };

/** Parses a text as Record JSON once: the value, or the reason it is not Record JSON. */
export function readRecordJson(text: string): { value: RecordJsonValue; problem: null } | { value: null; problem: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { value: null, problem: "not JSON" };
  }
  const problem = valueProblem(value, 0);
  if (problem) return { value: null, problem };
  if (JSON.stringify(value) !== text)
    return { value: null, problem: "not in Record JSON form (white space, duplicate member, or escaping)" };
  return { value: value as RecordJsonValue, problem: null };
}

/** Why a text is not Record JSON, or null when it is. */
export function recordJsonProblem(text: string): string | null {
  return readRecordJson(text).problem;
}

/** Parses Record JSON, throwing with the reason when the text is not in that form. */
export function parseRecordJson(text: string): RecordJsonValue {
  const read = readRecordJson(text);
  if (read.problem !== null) throw new Error(read.problem);
  return read.value;
}

/** Serializes a value as Record JSON, throwing if it holds anything Record JSON cannot. */
export function toRecordJson(value: RecordJsonValue): string {
  const problem = valueProblem(value, 0);
  if (problem) throw new Error(problem);
  return JSON.stringify(value);
}

const MAX_DEPTH = 32;
const INDEX_RE = /^(?:0|[1-9][0-9]*)$/;
const isDigit = (code: number) => code >= 48 && code <= 57;

function valueProblem(value: unknown, depth: number): string | null {
  if (depth > MAX_DEPTH) return "nested too deeply";
  switch (typeof value) {
    case "string":
      return value.isWellFormed() ? null : "string holds a lone surrogate";
    case "number":
      return Number.isSafeInteger(value) ? null : "number is not a safe integer";
    case "boolean":
      return null;
    case "object": {
      if (value === null) return null;
      if (Array.isArray(value)) {
        for (const item of value) {
          const p = valueProblem(item, depth + 1);
          if (p) return p;
        }
        return null;
      }
      for (const key of Object.keys(value)) {
        if (!key.isWellFormed()) return "member name holds a lone surrogate";
        if (isDigit(key.charCodeAt(0)) && INDEX_RE.test(key) && Number(key) < 2 ** 32 - 1) return "member name is an array index";
        const p = valueProblem((value as Record<string, unknown>)[key], depth + 1);
        if (p) return p;
      }
      return null;
    }
    default:
      return `unsupported value of type ${typeof value}`;
  }
}
