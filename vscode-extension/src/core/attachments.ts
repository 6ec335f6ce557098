/**
 * Attachments of the next message (issue 17, REQ-ATTACH-*): the chips the composer shows and what they send
 * in `phoenix/sendMessage.attachments`. Pure (no `vscode`, no DOM): the host builds chips from the editor's
 * selection, a dropped file or the diagnostics; the webview filters the workspace's files for `@`.
 */

import type { Attachment, DiagnosticIn, FileAttachment, InstructionFileView, LineRange } from "../protocol/wire";

/** The schema's cap on `attachments` (SendMessageParams). */
export const MAX_ATTACHMENTS = 20;
/** The schema's cap on one diagnostics attachment. */
export const MAX_DIAGNOSTICS = 500;
/** How many workspace files the host lists for the `@` picker (findFiles' maxResults). */
export const MAX_LISTED_FILES = 5000;
/** The `@` picker's pseudo entry that attaches the current file's diagnostics. */
export const PROBLEMS = "problems";

/** One chip in the composer: what it shows (as text) and what it sends. */
export interface Chip {
  /** `file:…` or `diagnostics:…` with the range: equal keys are the same attachment (added once) */
  key: string;
  label: string;
  /** the tooltip: the workspace-relative path and what is attached */
  title: string;
  attachment: Attachment;
}

/** A workspace file as the host lists it for the picker. */
export interface WorkspaceFile {
  uri: string;
  /** relative to its workspace folder (with the folder's name first in a multi-root workspace) */
  path: string;
}

function chipKey(a: Attachment): string {
  if (a.kind === "diagnostics" || "diagnostics" in a) return `diagnostics:${a.uri}`;
  const range = (a as FileAttachment).range;
  return range ? `file:${a.uri}#${range.startLine}-${range.endLine}` : `file:${a.uri}`;
}

/** A chip for a file (whole, or lines of it). `path` is what the user sees: workspace-relative when it can be. */
export function fileChip(uri: string, path: string, range?: LineRange): Chip {
  const attachment: Attachment = range ? { kind: "file", uri, range } : { kind: "file", uri };
  const lines = range ? (range.startLine === range.endLine ? `${range.startLine + 1}` : `${range.startLine + 1}-${range.endLine + 1}`) : "";
  return {
    key: chipKey(attachment),
    label: lines ? `${basename(path)}:${lines}` : basename(path),
    title: lines ? `${path}, line${range && range.startLine !== range.endLine ? "s" : ""} ${lines}` : `${path} (the whole file)`,
    attachment,
  };
}

/** A chip for a file's problems (`@problems`). */
export function diagnosticsChip(uri: string, path: string, diagnostics: DiagnosticIn[]): Chip {
  const attachment: Attachment = { kind: "diagnostics", uri, diagnostics: diagnostics.slice(0, MAX_DIAGNOSTICS) };
  const n = diagnostics.length;
  return {
    key: chipKey(attachment),
    label: `Problems: ${basename(path)} (${n})`,
    title: `${n === 0 ? "No problems" : `${n} problem${n === 1 ? "" : "s"}`} the editor shows in ${path}`,
    attachment,
  };
}

/** Add chips to a list: the same attachment once (a newer one replaces it, e.g. fresher diagnostics), at most MAX_ATTACHMENTS. */
export function addChips(chips: Chip[], added: Chip[]): Chip[] {
  const out = [...chips];
  for (const chip of added) {
    const i = out.findIndex((c) => c.key === chip.key);
    if (i >= 0) out[i] = chip;
    else if (out.length < MAX_ATTACHMENTS) out.push(chip);
  }
  return out;
}

/**
 * The 0-based inclusive lines of an editor selection. A selection that ends at the start of a line leaves
 * that line out (a whole-line selection made with Shift+Down); an empty selection is the whole file
 * (undefined).
 */
export function selectionLines(
  start: { line: number; character: number },
  end: { line: number; character: number },
): LineRange | undefined {
  if (start.line === end.line && start.character === end.character) return undefined;
  const last = end.line > start.line && end.character === 0 ? end.line - 1 : end.line;
  return { startLine: start.line, endLine: last };
}

/** VS Code's DiagnosticSeverity (Error 0, Warning 1, Information 2, Hint 3) as the wire names it. */
const SEVERITIES = ["error", "warning", "information", "hint"] as const;

/** An editor diagnostic (the fields of `vscode.Diagnostic` the wire needs) as the wire's DiagnosticIn. */
export function toDiagnosticIn(d: {
  range: { start: { line: number } };
  severity?: number;
  message: string;
  source?: string;
}): DiagnosticIn {
  const severity = d.severity !== undefined ? SEVERITIES[d.severity] : undefined;
  return {
    line: d.range.start.line,
    ...(severity ? { severity } : {}),
    message: d.message,
    ...(d.source ? { source: d.source } : {}),
  };
}

/** The text after an `@` that the caret ends (the picker's query), or undefined when the caret is not in one. */
export function mentionAt(text: string, caret: number): { start: number; query: string } | undefined {
  const m = /(^|\s)@([^\s@]*)$/.exec(text.slice(0, caret));
  if (!m) return undefined;
  return { start: caret - m[2].length - 1, query: m[2] };
}

/**
 * Fuzzy filter for the `@` picker: the query's characters in order (case-insensitive), best first: a match
 * in the file's name before one spread over its path, a contiguous match before a scattered one, shorter
 * paths first.
 */
export function fuzzyFilter(files: WorkspaceFile[], query: string, limit = 50): WorkspaceFile[] {
  const q = query.toLowerCase();
  if (!q) return [...files].sort((a, b) => a.path.length - b.path.length || a.path.localeCompare(b.path)).slice(0, limit);
  const scored: { file: WorkspaceFile; score: number }[] = [];
  for (const file of files) {
    const score = matchScore(file.path.toLowerCase(), q);
    if (score !== undefined) scored.push({ file, score });
  }
  scored.sort((a, b) => a.score - b.score || a.file.path.length - b.file.path.length || a.file.path.localeCompare(b.file.path));
  return scored.slice(0, limit).map((s) => s.file);
}

/** Lower is better; undefined: no match. */
function matchScore(path: string, q: string): number | undefined {
  const name = basename(path);
  if (name.startsWith(q)) return 0;
  if (name.includes(q)) return 1;
  if (path.includes(q)) return 2;
  let at = 0;
  let gaps = 0;
  for (const ch of q) {
    const i = path.indexOf(ch, at);
    if (i < 0) return undefined;
    if (i > at) gaps++;
    at = i + 1;
  }
  return 3 + gaps;
}

function basename(path: string): string {
  const parts = path.split(/[\\/]/);
  return parts[parts.length - 1] || path;
}

/**
 * A glob of what the `@` picker leaves out: the usual build and tool directories, plus the `files.exclude`
 * and `search.exclude` patterns that are switched on (findFiles applies neither when given an exclude).
 */
export function excludeGlob(...settings: (Record<string, unknown> | undefined)[]): string {
  const patterns = new Set([
    "**/.git/**",
    "**/node_modules/**",
    "**/.venv/**",
    "**/venv/**",
    "**/__pycache__/**",
    "**/.mypy_cache/**",
    "**/.pytest_cache/**",
    "**/.ruff_cache/**",
    "**/.tox/**",
    "**/dist/**",
    "**/out/**",
    "**/build/**",
    "**/target/**",
  ]);
  for (const setting of settings) {
    for (const [pattern, on] of Object.entries(setting ?? {})) {
      // `true` excludes; an object is a `when` clause (e.g. sibling files), which a glob cannot say: kept in
      if (on === true && !pattern.includes("{") && !pattern.includes(",")) patterns.add(pattern);
    }
  }
  return `{${[...patterns].join(",")}}`;
}

// ------------------------------------------------------------------------------------- instructions

/**
 * The line at the top of the conversation that names the project instruction files in effect (REQ-INSTR-003):
 * each path relative to its workspace folder when it is in one (`~/` for the home directory), with what the
 * cap cut and what was skipped and why. Empty: no files.
 */
export function instructionsLine(files: InstructionFileView[], roots: string[], home?: string): string[] {
  return files.map((f) => {
    const shown = displayPath(f.path, roots, home);
    if (f.problem) return `${shown} (skipped: ${f.problem})`;
    if (f.kept < f.size) return `${shown} (cut: ${f.kept.toLocaleString("en-US")} of ${f.size.toLocaleString("en-US")} bytes kept)`;
    return shown;
  });
}

export function displayPath(path: string, roots: string[], home?: string): string {
  const norm = (p: string) => p.replace(/[\\/]+$/, "");
  for (const root of [...roots].map(norm).sort((a, b) => b.length - a.length)) {
    if (root && path.startsWith(`${root}/`)) return path.slice(root.length + 1);
    if (root && path.startsWith(`${root}\\`)) return path.slice(root.length + 1);
  }
  const h = home ? norm(home) : "";
  if (h && path.startsWith(`${h}/`)) return `~/${path.slice(h.length + 1)}`;
  return path;
}
