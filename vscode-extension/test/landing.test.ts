/**
 * A bash command's accepted changes and an undo are saved once VS Code applied them (issue 36, REQ-VSC-018):
 * seen in the real VS Code, the review's created file stayed empty on disk and the edited one held its old
 * bytes (the buffers were left unsaved), so the disk differed from what the command produced.
 */

import { test } from "node:test";
import assert from "node:assert/strict";
import { savedAfterApply, urisToSave, type EditShape } from "../src/core/landing";

const REVIEW = "phoenix: a bash command's changes (4 file(s))";
const EDIT: EditShape = {
  documentChanges: [
    { kind: "delete", uri: "file:///w/gone.txt" },
    { kind: "rename", oldUri: "file:///w/old.txt", newUri: "file:///w/moved.txt" },
    { kind: "create", uri: "file:///w/new.txt" },
    { textDocument: { uri: "file:///w/new.txt" } },
    { textDocument: { uri: "file:///w/a.txt" } },
  ],
};

test("a review's and an undo's documents are saved once applied: created, renamed to and edited, once each (REQ-VSC-018)", () => {
  assert.deepEqual(urisToSave(REVIEW, EDIT), ["file:///w/moved.txt", "file:///w/new.txt", "file:///w/a.txt"]);
  assert.deepEqual(urisToSave("phoenix: undo bash: sed -i s/a/b/ x (1 file(s))", EDIT).length, 3);
});

test("a patch, or an edit labelled almost alike, stays unsaved (REQ-VSC-018)", () => {
  for (const label of [undefined, "phoenix: patch a.txt", "a bash command's changes (1 file(s))", "phoenix: undone"]) {
    assert.equal(savedAfterApply(label), false, String(label));
    assert.deepEqual(urisToSave(label, EDIT), [], String(label));
  }
});

test("a document created then deleted, or renamed away, is not saved (REQ-VSC-018)", () => {
  const edit: EditShape = {
    documentChanges: [
      { kind: "create", uri: "file:///w/t.txt" },
      { kind: "delete", uri: "file:///w/t.txt" },
      { textDocument: { uri: "file:///w/b.txt" } },
      { kind: "rename", oldUri: "file:///w/b.txt", newUri: "file:///w/c.txt" },
    ],
  };
  assert.deepEqual(urisToSave(REVIEW, edit), ["file:///w/c.txt"]);
});
