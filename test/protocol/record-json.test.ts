import { describe, expect, it } from "vitest";
import { parseRecordJson, recordJsonProblem, toRecordJson } from "../../protocol/index.ts";

describe("Record JSON", () => {
  it("accepts what JSON.stringify prints for strings, safe integers, booleans and null", () => {
    const text = JSON.stringify({ a: "é\n\u2028", b: [1, -2, 9007199254740991], c: { d: null, e: true } });
    expect(recordJsonProblem(text)).toBeNull();
    expect(parseRecordJson(text)).toEqual(JSON.parse(text));
  });

  it.each([
    ['{"a":1,"a":2}', /Record JSON form/],
    ['{"a": 1}', /Record JSON form/],
    ['{"a":1.5}', /safe integer/],
    ['{"a":9007199254740993}', /safe integer/],
    ['{"a":1e3}', /Record JSON form/],
    ['{"a":"\\ud800"}', /lone surrogate/],
    ['{"\\udc00":1}', /lone surrogate/],
    ['{"a":"\\u0041"}', /Record JSON form/],
    ['{"b":1,"1":2}', /array index/],
    ['{"a":1} ', /Record JSON form/],
    ["\ufeff{}", /not JSON/],
    ['{"a":1}x', /not JSON/],
  ])("refuses %s", (text, reason) => {
    expect(recordJsonProblem(text)).toMatch(reason);
  });

  it("refuses deep nesting instead of recursing without bound", () => {
    const deep = `${"[".repeat(40)}${"]".repeat(40)}`;
    expect(recordJsonProblem(deep)).toMatch(/nested too deeply/);
  });

  it("toRecordJson refuses values Record JSON cannot hold", () => {
    expect(() => toRecordJson({ a: 0.5 })).toThrow(/safe integer/);
    expect(toRecordJson({ a: "x", b: 1 })).toBe('{"a":"x","b":1}');
  });
});
