import { test } from "node:test";
import assert from "node:assert/strict";
import { applyUnifiedDiff, DiffApplyError, diffLines, parseUnifiedDiff } from "../src/core/diff";

const ORIGINAL = "one\ntwo\nthree\nfour\nfive\n";
const DIFF = "--- a/f.txt\n+++ b/f.txt\n@@ -2,3 +2,4 @@\n two\n-three\n+THREE\n+three and a half\n four\n";

test("a unified diff applies to the current text", () => {
  assert.equal(applyUnifiedDiff(ORIGINAL, DIFF), "one\ntwo\nTHREE\nthree and a half\nfour\nfive\n");
});

test("a buffer that moved since the diff still takes it (hunk found by its context)", () => {
  assert.equal(applyUnifiedDiff(`zero\n${ORIGINAL}`, DIFF), "zero\none\ntwo\nTHREE\nthree and a half\nfour\nfive\n");
});

test("a diff that no longer matches says which hunk", () => {
  assert.throws(() => applyUnifiedDiff("something else\n", DIFF), (e: unknown) => e instanceof DiffApplyError && /hunk 1/.test(e.message));
});

test("new files, appends and a missing final newline", () => {
  assert.equal(applyUnifiedDiff("", "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n"), "hello\nworld\n");
  assert.equal(applyUnifiedDiff("a\n", "--- a/x\n+++ b/x\n@@ -1,0 +2,1 @@\n+b\n"), "a\nb\n");
  assert.equal(applyUnifiedDiff("a\nb", "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"), "a\nc");
});

test("display lines carry types and line numbers", () => {
  const lines = diffLines(DIFF);
  assert.deepEqual(lines.map((l) => l.type), ["file", "hunk", "context", "del", "add", "add", "context"]);
  assert.deepEqual([lines[3].oldLine, lines[4].newLine], [3, 3]);
});

test("a changed line that looks like a file header stays the hunk's line, shown and applied (REQ-VSC-017)", () => {
  // the file's line "-- old comment" becomes "++ new": its diff holds "--- old comment" and "+++ new"
  const diff = "--- a/f.lua\n+++ b/f.lua\n@@ -1,3 +1,3 @@\n local x = 1\n--- old comment\n+++ new\n guard()\n";
  const files = parseUnifiedDiff(diff);
  assert.equal(files.length, 1);
  assert.deepEqual(files[0].hunks[0].lines.map((l) => `${l.type}${l.text}`), [" local x = 1", "--- old comment", "+++ new", " guard()"]);
  assert.deepEqual(diffLines(diff).filter((l) => l.type === "file").map((l) => l.text), ["f.lua"]);
  assert.equal(applyUnifiedDiff("local x = 1\n-- old comment\nguard()\n", diff), "local x = 1\n++ new\nguard()\n");
});
