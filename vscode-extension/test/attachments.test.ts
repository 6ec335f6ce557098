/** The composer's attachments and the instructions line: pure functions (issue 17). */

import { test } from "node:test";
import assert from "node:assert/strict";
import {
  addChips,
  diagnosticsChip,
  excludeGlob,
  fileChip,
  fuzzyFilter,
  instructionsLine,
  MAX_ATTACHMENTS,
  mentionAt,
  selectionLines,
  toDiagnosticIn,
} from "../src/core/attachments";

test("a selection becomes 0-based inclusive lines; a whole-line selection leaves the next line out; none is the whole file", () => {
  assert.deepEqual(selectionLines({ line: 2, character: 4 }, { line: 5, character: 1 }), { startLine: 2, endLine: 5 });
  assert.deepEqual(selectionLines({ line: 0, character: 0 }, { line: 2, character: 0 }), { startLine: 0, endLine: 1 });
  assert.deepEqual(selectionLines({ line: 3, character: 0 }, { line: 3, character: 7 }), { startLine: 3, endLine: 3 });
  assert.equal(selectionLines({ line: 3, character: 2 }, { line: 3, character: 2 }), undefined);
});

test("file chips say the file and its lines, 1-based; the wire gets the 0-based range", () => {
  const c = fileChip("file:///w/src/a.py", "src/a.py", { startLine: 0, endLine: 1 });
  assert.equal(c.label, "a.py:1-2");
  assert.equal(c.title, "src/a.py, lines 1-2");
  assert.deepEqual(c.attachment, { kind: "file", uri: "file:///w/src/a.py", range: { startLine: 0, endLine: 1 } });
  const whole = fileChip("file:///w/src/a.py", "src/a.py");
  assert.equal(whole.label, "a.py");
  assert.deepEqual(whole.attachment, { kind: "file", uri: "file:///w/src/a.py" });
  assert.equal(fileChip("file:///w/a.py", "a.py", { startLine: 4, endLine: 4 }).label, "a.py:5");
});

test("editor diagnostics map to the wire's DiagnosticIn; @problems makes one chip", () => {
  const d = toDiagnosticIn({ range: { start: { line: 3 } }, severity: 0, message: "undefined name 'x'", source: "pyflakes" });
  assert.deepEqual(d, { line: 3, severity: "error", message: "undefined name 'x'", source: "pyflakes" });
  assert.deepEqual(toDiagnosticIn({ range: { start: { line: 0 } }, severity: 3, message: "m" }), { line: 0, severity: "hint", message: "m" });
  const chip = diagnosticsChip("file:///w/a.py", "a.py", [d]);
  assert.equal(chip.label, "Problems: a.py (1)");
  assert.deepEqual(chip.attachment, { kind: "diagnostics", uri: "file:///w/a.py", diagnostics: [d] });
});

test("chips are added once (a newer one replaces the same attachment) and at most 20", () => {
  const a = fileChip("file:///w/a.py", "a.py");
  const b = fileChip("file:///w/a.py", "a.py", { startLine: 0, endLine: 0 });
  assert.deepEqual(addChips([a], [a, b]).map((c) => c.key), [a.key, b.key]);
  const many = Array.from({ length: 25 }, (_, i) => fileChip(`file:///w/${i}.py`, `${i}.py`));
  assert.equal(addChips([], many).length, MAX_ATTACHMENTS);
});

test("@ at the caret opens a mention; an e-mail address does not", () => {
  assert.deepEqual(mentionAt("look at @he", 11), { start: 8, query: "he" });
  assert.deepEqual(mentionAt("@", 1), { start: 0, query: "" });
  assert.equal(mentionAt("mail me@example.com", 19), undefined);
  assert.equal(mentionAt("@hello world", 12), undefined);
});

test("the fuzzy filter ranks a name match first, then scattered letters; shorter paths first", () => {
  const files = ["src/hello.py", "docs/shell.md", "tests/test_help.py", "h/e/l/l/o.txt", "README.md"].map((path) => ({ uri: `file:///w/${path}`, path }));
  assert.deepEqual(fuzzyFilter(files, "hel").map((f) => f.path), ["src/hello.py", "docs/shell.md", "tests/test_help.py", "h/e/l/l/o.txt"]);
  assert.deepEqual(fuzzyFilter(files, "HELLO").map((f) => f.path), ["src/hello.py", "h/e/l/l/o.txt"]);
  assert.deepEqual(fuzzyFilter(files, "zzz"), []);
  assert.equal(fuzzyFilter(files, "", 2).length, 2);
});

test("the @ picker's exclude glob leaves out the usual directories and the excludes switched on", () => {
  const glob = excludeGlob({ "**/.git": true, "**/*.log": true, "**/off": false, "**/*.js": { when: "$(basename).ts" } });
  assert.match(glob, /^\{.*\}$/);
  for (const p of ["**/node_modules/**", "**/.venv/**", "**/*.log"]) assert.ok(glob.includes(p), p);
  assert.ok(!glob.includes("**/off"));
  assert.ok(!glob.includes("*.js"));
});

test("the instructions line shows paths relative to the workspace, the cut and the skipped (REQ-INSTR-003)", () => {
  const line = instructionsLine(
    [
      { path: "/home/u/.config/phoenix-lsp/AGENTS.md", size: 10, kept: 10 },
      { path: "/w/AGENTS.md", size: 40000, kept: 1234 },
      { path: "/w/sub/CLAUDE.md", size: 5, kept: 0, problem: "not UTF-8" },
      { path: "/elsewhere/AGENTS.md", size: 3, kept: 3 },
    ],
    ["/w"],
    "/home/u",
  );
  assert.deepEqual(line, [
    "~/.config/phoenix-lsp/AGENTS.md",
    "AGENTS.md (cut: 1,234 of 40,000 bytes kept)",
    "sub/CLAUDE.md (skipped: not UTF-8)",
    "/elsewhere/AGENTS.md",
  ]);
});
