/**
 * Unified diffs (as the patch tool writes them): parsed into lines for display, and applied to the
 * current text to show the proposed result in VS Code's diff editor before the user decides. Pure.
 */

export interface DiffLine {
  type: "context" | "add" | "del" | "hunk" | "file" | "note";
  text: string;
  oldLine?: number;
  newLine?: number;
}

export interface Hunk {
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  lines: { type: " " | "+" | "-"; text: string; noNewline: boolean }[];
}

export interface FileDiff {
  oldPath: string;
  newPath: string;
  created: boolean;
  hunks: Hunk[];
}

const HUNK = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

export function parseUnifiedDiff(diff: string): FileDiff[] {
  const files: FileDiff[] = [];
  let file: FileDiff | undefined;
  let hunk: Hunk | undefined;
  const lines = diff.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  // the lines the current hunk still holds, by its header's counts: within them a line is the hunk's, even one
  // that looks like a file header ("--- a/x" is the removed line "-- a/x")
  let oldLeft = 0;
  let newLeft = 0;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (hunk && (oldLeft > 0 || newLeft > 0)) {
      const type = line[0];
      if (line.startsWith("\\")) {
        const prev = hunk.lines[hunk.lines.length - 1];
        if (prev) prev.noNewline = true;
        continue;
      }
      const text = type === " " || type === "+" || type === "-" ? line.slice(1) : "";
      const kind = type === "+" || type === "-" ? type : " ";
      hunk.lines.push({ type: kind, text, noNewline: false });
      if (kind !== "+") oldLeft--;
      if (kind !== "-") newLeft--;
      continue;
    }
    if (line.startsWith("--- ") && lines[i + 1]?.startsWith("+++ ")) {
      const oldPath = stripPrefix(line.slice(4));
      const newPath = stripPrefix(lines[i + 1].slice(4));
      file = { oldPath, newPath, created: oldPath === "/dev/null", hunks: [] };
      files.push(file);
      hunk = undefined;
      i++;
      continue;
    }
    const m = HUNK.exec(line);
    if (m) {
      if (!file) {
        file = { oldPath: "", newPath: "", created: false, hunks: [] };
        files.push(file);
      }
      hunk = {
        oldStart: Number(m[1]),
        oldLines: m[2] === undefined ? 1 : Number(m[2]),
        newStart: Number(m[3]),
        newLines: m[4] === undefined ? 1 : Number(m[4]),
        lines: [],
      };
      file.hunks.push(hunk);
      oldLeft = hunk.oldLines;
      newLeft = hunk.newLines;
      continue;
    }
    if (!hunk) continue;
    if (line.startsWith("\\")) {
      const prev = hunk.lines[hunk.lines.length - 1];
      if (prev) prev.noNewline = true;
      continue;
    }
    const type = line[0];
    if (type === " " || type === "+" || type === "-") {
      hunk.lines.push({ type, text: line.slice(1), noNewline: false });
    } else if (line === "") {
      hunk.lines.push({ type: " ", text: "", noNewline: false });
    }
  }
  return files;
}

function stripPrefix(path: string): string {
  const p = path.split("\t")[0];
  if (p === "/dev/null") return p;
  return p.replace(/^[ab]\//, "");
}

/** Display lines with old/new line numbers. */
export function diffLines(diff: string): DiffLine[] {
  const out: DiffLine[] = [];
  for (const file of parseUnifiedDiff(diff)) {
    out.push({ type: "file", text: file.created ? `${file.newPath} (new file)` : file.newPath || file.oldPath });
    for (const hunk of file.hunks) {
      out.push({
        type: "hunk",
        text: `@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`,
      });
      let oldLine = hunk.oldStart;
      let newLine = hunk.newStart;
      for (const l of hunk.lines) {
        if (l.type === " ") out.push({ type: "context", text: l.text, oldLine: oldLine++, newLine: newLine++ });
        else if (l.type === "-") out.push({ type: "del", text: l.text, oldLine: oldLine++ });
        else out.push({ type: "add", text: l.text, newLine: newLine++ });
        if (l.noNewline) out.push({ type: "note", text: "No newline at end of file" });
      }
    }
  }
  return out;
}

export class DiffApplyError extends Error {}

/**
 * Apply the first file of a unified diff to `original`. Each hunk is looked for at its stated line first,
 * then at the nearest offset where its old lines match (the buffer may have moved since the diff was
 * made). Throws DiffApplyError naming the hunk when its old lines are nowhere.
 */
export function applyUnifiedDiff(original: string, diff: string): string {
  const file = parseUnifiedDiff(diff)[0];
  if (!file) return original;
  const lines = splitKeep(original);
  let delta = 0;
  let searchFrom = 0;
  for (const [index, hunk] of file.hunks.entries()) {
    const oldLines = hunk.lines.filter((l) => l.type !== "+").map(lineText);
    const newLines = hunk.lines.filter((l) => l.type !== "-").map(lineText);
    const expected = Math.max(0, hunk.oldStart - 1 + delta - (hunk.oldLines === 0 ? -1 : 0));
    const at = locate(lines, oldLines, expected, searchFrom);
    if (at < 0) {
      throw new DiffApplyError(
        `hunk ${index + 1} (@@ -${hunk.oldStart},${hunk.oldLines}) does not match the current text`,
      );
    }
    lines.splice(at, oldLines.length, ...newLines);
    delta += newLines.length - oldLines.length;
    searchFrom = at + newLines.length;
  }
  return lines.join("");
}

function lineText(l: { text: string; noNewline: boolean }): string {
  return l.noNewline ? l.text : `${l.text}\n`;
}

function splitKeep(text: string): string[] {
  if (!text) return [];
  const parts = text.split("\n");
  const out = parts.slice(0, -1).map((p) => `${p}\n`);
  if (parts[parts.length - 1] !== "") out.push(parts[parts.length - 1]);
  return out;
}

function matches(lines: string[], old: string[], at: number): boolean {
  if (at < 0 || at + old.length > lines.length) return false;
  for (let i = 0; i < old.length; i++) {
    const want = old[i];
    const have = lines[at + i];
    // the last line of the buffer may lack its newline where the diff's line has one, and vice versa
    if (have !== want && have.replace(/\n$/, "") !== want.replace(/\n$/, "")) return false;
  }
  return true;
}

function locate(lines: string[], old: string[], expected: number, from: number): number {
  if (old.length === 0) return Math.min(Math.max(expected, from), lines.length);
  for (let d = 0; d <= lines.length; d++) {
    for (const at of [expected - d, expected + d]) {
      if (at >= from && matches(lines, old, at)) return at;
    }
  }
  return -1;
}
