import { findNodeAtLocation, type JSONPath, type Node, parseTree } from "jsonc-parser";

// Edits a JSON document in place: a member or element is inserted or removed as text, so every
// other byte of the user's file (spacing, key order, a missing final newline) stays as it was,
// and removing what was inserted gives the original text back.

interface Style {
  eol: string;
  unit: string;
}

function styleOf(text: string): Style {
  const eol = text.includes("\r\n") ? "\r\n" : "\n";
  const indented = /\n([ \t]+)["{[\]}]/.exec(text);
  return { eol, unit: indented?.[1] ?? "  " };
}

function lineIndent(text: string, offset: number): string {
  const start = text.lastIndexOf("\n", offset - 1) + 1;
  return /^[ \t]*/.exec(text.slice(start))![0];
}

function nodeAt(text: string, path: JSONPath): Node {
  const root = parseTree(text);
  const node = root && (path.length ? findNodeAtLocation(root, path) : root);
  if (!node || (node.type !== "object" && node.type !== "array")) throw new Error(`no object or array at ${path.join(".")}`);
  return node;
}

const end = (n: Node) => n.offset + n.length;
const splice = (text: string, from: number, to: number, piece: string) => text.slice(0, from) + piece + text.slice(to);

/**
 * Inserts a child into the object or array at `path`: a member `key: value` (objects) or an element
 * (arrays) at `index` (-1: at the end), laid out like its siblings.
 */
export function insertChild(text: string, path: JSONPath, index: number, value: unknown, key?: string): string {
  const node = nodeAt(text, path);
  const kids = node.children ?? [];
  const style = styleOf(text);
  const at = index < 0 || index >= kids.length ? kids.length : index;
  const oneLine = kids.length > 0 && !text.slice(node.offset, end(node)).includes("\n");
  const indent = kids.length > 0 ? lineIndent(text, kids[0]!.offset) : lineIndent(text, node.offset) + style.unit;
  const body = oneLine ? JSON.stringify(value) : JSON.stringify(value, null, style.unit).replaceAll("\n", style.eol + indent);
  const child = `${key === undefined ? "" : `${JSON.stringify(key)}: `}${body}`;
  if (kids.length === 0) {
    return splice(text, node.offset + 1, end(node) - 1, `${style.eol}${indent}${child}${style.eol}${lineIndent(text, node.offset)}`);
  }
  const sep = oneLine ? ", " : `,${style.eol}${indent}`;
  if (at === kids.length) return splice(text, end(kids.at(-1)!), end(kids.at(-1)!), `${sep}${child}`);
  return splice(text, kids[at]!.offset, kids[at]!.offset, `${child}${sep}`);
}

/** Removes the child at `index` of the object or array at `path`, with the separator that went with it. */
export function removeChild(text: string, path: JSONPath, index: number): string {
  const node = nodeAt(text, path);
  const kids = node.children ?? [];
  const kid = kids[index];
  if (!kid) throw new Error(`no child ${index} at ${path.join(".")}`);
  if (kids.length === 1) return splice(text, node.offset + 1, end(node) - 1, "");
  if (index === kids.length - 1) return splice(text, end(kids[index - 1]!), end(kid), "");
  return splice(text, kid.offset, kids[index + 1]!.offset, "");
}

/** The index of member `key` in the object at `path`, or -1. */
export function memberIndex(text: string, path: JSONPath, key: string): number {
  return (nodeAt(text, path).children ?? []).findIndex((p) => p.children?.[0]?.value === key);
}

/** The exact text of member `key`'s value in the object at `path`, or null when there is no such member. */
export function memberText(text: string, path: JSONPath, key: string): string | null {
  const member = (nodeAt(text, path).children ?? []).find((p) => p.children?.[0]?.value === key);
  const value = member?.children?.[1];
  return value ? text.slice(value.offset, end(value)) : null;
}

/**
 * Sets member `key` of the object at `path` to the JSON text `raw` (in place when it exists, so
 * its neighbours keep their bytes; appended otherwise), or removes it when `raw` is null.
 */
export function setMemberText(text: string, path: JSONPath, key: string, raw: string | null): string {
  const kids = nodeAt(text, path).children ?? [];
  const index = kids.findIndex((p) => p.children?.[0]?.value === key);
  if (raw === null) return index < 0 ? text : removeChild(text, path, index);
  const value = kids[index]?.children?.[1];
  if (value) return splice(text, value.offset, end(value), raw);
  // Inserted as a placeholder laid out like its siblings, then the placeholder's text replaced.
  const placed = insertChild(text, path, -1, null, key);
  return setMemberText(placed, path, key, raw);
}
