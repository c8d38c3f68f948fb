import { existsSync, readFileSync, rmdirSync, rmSync } from "node:fs";
import { dirname } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { z } from "zod";
import { ExitError } from "../lib/errors.ts";
import { statePath, writeStateFile } from "../lib/state.ts";

// What a harness's configuration held before tacho wrote into it (state/originals.json), so that
// unenroll and reassign give back exactly that: a file or directory tacho created goes again, and a
// setting tacho replaced or added gets its old text back (or goes, when it was absent). A setting
// the user changed after tacho wrote it is theirs: it is left as they made it.

const Setting = z.strictObject({
  /** The setting's exact text before tacho first wrote it (a JSON value's source text); null: it was absent. */
  before: z.string().nullable(),
  /** The value tacho last wrote there. */
  wrote: z.unknown(),
});
/** One setting tacho wrote, and what was there before. */
export type Setting = z.infer<typeof Setting>;

const Originals = z.strictObject({
  v: z.literal(1),
  /** Configuration files tacho created, each with the directories it created for it (innermost first). */
  created: z.record(z.string(), z.array(z.string())),
  /** Per file, per setting (a dotted path such as `env.ANTHROPIC_BASE_URL`). */
  settings: z.record(z.string(), z.record(z.string(), Setting)),
});
type Originals = z.infer<typeof Originals>;

const FILE = "originals.json";

function read(): Originals {
  let text: string;
  try {
    text = readFileSync(statePath(FILE), "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { v: 1, created: {}, settings: {} };
    throw new ExitError(1, `cannot read ${statePath(FILE)}: ${(err as Error).message}`);
  }
  let json: unknown = null;
  try {
    json = JSON.parse(text);
  } catch {}
  const parsed = Originals.safeParse(json);
  // Without it tacho cannot give the user's settings back: stop rather than guess.
  if (!parsed.success)
    throw new ExitError(
      1,
      `${statePath(FILE)} is damaged; it holds what your harness settings were before tacho wrote them (nothing was changed)`,
    );
  return parsed.data;
}

function save(o: Originals): void {
  for (const [path, settings] of Object.entries(o.settings)) if (Object.keys(settings).length === 0) delete o.settings[path];
  if (Object.keys(o.created).length === 0 && Object.keys(o.settings).length === 0) rmSync(statePath(FILE), { force: true });
  else writeStateFile(FILE, `${JSON.stringify(o, null, 2)}\n`);
}

/** Notes that tacho is about to create `path` (and the directories it lacks), unless it is noted already. */
export function noteCreated(path: string): void {
  const o = read();
  if (o.created[path]) return;
  const dirs: string[] = [];
  for (let dir = dirname(path); !existsSync(dir) && dir !== dirname(dir); dir = dirname(dir)) dirs.push(dir);
  o.created[path] = dirs;
  save(o);
}

/** Whether tacho created `path`. */
export function wasCreated(path: string): boolean {
  return read().created[path] !== undefined;
}

/** Removes a file tacho created (it holds nothing of the user's now) and the directories it created for it, when empty. */
export function removeCreated(path: string): void {
  const o = read();
  const dirs = o.created[path] ?? [];
  rmSync(path, { force: true });
  for (const dir of dirs) {
    try {
      rmdirSync(dir);
    } catch {
      break; // something else lives there now
    }
  }
  delete o.created[path];
  delete o.settings[path];
  save(o);
}

/** The record of one setting tacho wrote, or null. */
export function settingOf(path: string, key: string): Setting | null {
  return read().settings[path]?.[key] ?? null;
}

/** Every setting noted for `path`, by key. */
export function settingsOf(path: string): Record<string, Setting> {
  return read().settings[path] ?? {};
}

/** Notes that tacho writes `wrote` at `key` over `before` (see {@link beforeOf}). */
export function noteSetting(path: string, key: string, before: string | null, wrote: unknown): void {
  const o = read();
  o.settings[path] = { ...o.settings[path], [key]: { before, wrote } };
  save(o);
}

/**
 * What to note as the setting's text before tacho: the first record's while the setting still
 * holds what tacho wrote, else the text it holds now (the user's, even one changed after enroll).
 */
export function beforeOf(record: Setting | null, current: unknown, currentText: string | null): string | null {
  return record && isDeepStrictEqual(current, record.wrote) ? record.before : currentText;
}

/** Forgets a setting once it is given back (or the user made it their own). */
export function forgetSetting(path: string, key: string): void {
  const o = read();
  if (!o.settings[path]?.[key]) return;
  delete o.settings[path][key];
  save(o);
}

/** Forgets everything (unenroll, after every file was given back). */
export function forgetAll(): void {
  rmSync(statePath(FILE), { force: true });
}
